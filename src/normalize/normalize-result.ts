import type { StreamName } from '../domain/streams.js';

/**
 * What every normaliser returns. A normaliser turns one received record into the row of its table,
 * or into a rejection that names the field and says what form was expected.
 */

/** The streams whose records are normalised (the `stream` of rejected_records). */
export type NormalizedStream = StreamName;

/** What a normaliser needs besides the record. */
export interface NormalizeContext {
  /** The account the record was read from: the row's `account_id`. */
  readonly accountId: string;
}

/** Why a record was not turned into a row. */
export interface Rejection {
  readonly stream: NormalizedStream;
  /** The wire field at fault, when one is. */
  readonly field?: string;
  /**
   * A sentence a person can act on: the field, the form expected, and what arrived. Always storable
   * in Postgres text (no U+0000, no unpaired surrogate) and short.
   */
  readonly reason: string;
  /** The record's identifier (call_uuid, endpoint_id, …) when it could be read. */
  readonly recordKey?: string;
}

export type { RejectedRecord } from '../domain/rejected-record.js';

/** A record that fits: its row and its identifier. */
export interface Normalized<Row> {
  readonly ok: true;
  readonly row: Row;
  /** The record's identifier, also in the row's key column. */
  readonly key: string;
}

/** A record that does not fit. */
export interface Rejected {
  readonly ok: false;
  readonly rejection: Rejection;
}

/** The outcome of normalising one record; `Extra` adds what a stream needs beyond the row. */
export type NormalizeResult<Row, Extra extends object = Record<never, never>> =
  (Normalized<Row> & Extra) | Rejected;
