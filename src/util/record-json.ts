/**
 * A record's JSON exactly as received, kept for a row's `raw` column: its text for anything that
 * reads it, and its bytes, which COPY takes as they are when `plainBytes` says they need no escape.
 */
export class RecordJson {
  constructor(
    /** The record's bytes, a view of its page's body. */
    readonly bytes: Uint8Array,
    /** The same bytes decoded as UTF-8. */
    readonly text: string,
    /**
     * The bytes hold no backslash and no control character (a tab, newline or carriage return
     * between tokens): COPY's text format takes them unchanged.
     */
    readonly plainBytes: boolean,
  ) {}

  toString(): string {
    return this.text;
  }
}
