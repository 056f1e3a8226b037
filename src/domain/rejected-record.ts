/**
 * A record that did not fit its table, as the quarantine (rejected_records) keeps it. Declared
 * here, inward of both the normalisers that produce it and the repository that stores it.
 */
export interface RejectedRecord {
  readonly accountId: string;
  /** The stream it was read for. */
  readonly stream: string;
  readonly reason: string;
  /** The record's identifier when it could be read. */
  readonly recordKey: string | undefined;
  /** The record's bytes exactly as received. */
  readonly bytes: Uint8Array;
}
