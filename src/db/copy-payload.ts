import { RecordJson } from '../util/record-json.js';

/**
 * One COPY into a table, as the loading port (LoadConnection.copyIn) takes it: the connection runs
 * it as `COPY … FROM STDIN` (pg, through pg-copy-streams) or `COPY … FROM '/dev/blob'` (PGlite),
 * in the transaction in hand, so COPY, upsert and checkpoint commit together.
 */
export class CopyPayload {
  constructor(
    /** The target, already quoted and schema-qualified: `"telephony"."trunk_calls_staging"`. */
    readonly target: string,
    /** Quoted column names in the order of the data's fields. */
    readonly columns: readonly string[],
    /**
     * The rows in the format `options` names: COPY text by default (tab-separated, `\N` for
     * null, newline-terminated), as a string or as byte chunks (a CopyText).
     */
    readonly data: CopyBytes | string,
    /**
     * Statements without parameters to run first, in the same transaction: the staging table's
     * creation or emptying. The PostgreSQL driver sends them in the COPY's own message, which
     * saves their round trips (a COPY already costs two: its start, then its rows).
     */
    readonly before: readonly string[] = [],
    /**
     * Statements without parameters that make the session ready for the COPY and change nothing
     * when run again (the staging table's `CREATE TEMP TABLE IF NOT EXISTS`), run before `before`.
     * A driver may leave one out on a session where it ran in a transaction that committed: on
     * PostgreSQL each costs the server about 0.3 ms of CPU a transaction even when there is
     * nothing to create (docs/scaling.md, "The cost of a loading transaction").
     */
    readonly sessionSetup: readonly string[] = [],
    /** COPY's options, as in `WITH (…)`: `FORMAT binary`; empty for the text format. */
    readonly options: string = '',
  ) {}

  /** The data as the bytes to send, in order. */
  chunks(): Buffer[] {
    return typeof this.data === 'string' ? [Buffer.from(this.data, 'utf8')] : this.data.chunks();
  }

  /** The COPY statement reading the data from `source` (`STDIN`, or a file such as PGlite's). */
  statement(source: string): string {
    const options = this.options === '' ? '' : ` WITH (${this.options})`;
    return `COPY ${this.target} (${this.columns.join(', ')}) FROM ${source}${options}`;
  }
}

/** COPY data as byte chunks, sent in order. */
export interface CopyBytes {
  chunks(): Buffer[];
}

/**
 * Bytes of a chunk of CopyText. A batch of rows is a few megabytes, sent as a few chunks: large
 * enough that sending them is a few socket writes, small enough that a batch buffered while others
 * load wastes little at the end of its last chunk.
 */
const COPY_CHUNK_BYTES = 256 * 1024;

/**
 * Rows in COPY text format, written as UTF-8 into byte chunks as they come. Faster and smaller than
 * keeping each row's line as a string and joining a batch's lines into one string before sending it:
 * the bytes are written once, outside the JavaScript heap, and go to the socket as they are.
 */
export class CopyText {
  readonly #out = new ByteChunks();

  /** Adds one row: `line` is its fields in COPY text format, tab-separated, without a newline. */
  append(line: string): void {
    // A UTF-16 code unit is at most three bytes of UTF-8.
    const current = this.#out.roomFor(line.length * 3 + 1);
    const written = current.write(line, this.#out.used, 'utf8');
    current[this.#out.used + written] = NEWLINE;
    this.#out.used += written + 1;
  }

  /**
   * Adds one row from its fields, each in COPY text format already. The last field (in every table
   * the record's raw JSON, most of the row's bytes) is written on its own after the others joined:
   * the row's whole line is never built as one string, which was a sixth of everything a backfill
   * allocated, and so a sixth of the young-generation collections. Leaves `fields` as it was.
   */
  appendFields(fields: string[]): void {
    const lastIndex = fields.length - 1;
    const last = fields[lastIndex];
    if (last === undefined) {
      this.append('');
      return;
    }
    fields[lastIndex] = '';
    // Ends with the tab before the last field.
    const head = fields.join('\t');
    fields[lastIndex] = last;
    const current = this.#out.roomFor((head.length + last.length) * 3 + 1);
    let used = this.#out.used;
    used += current.write(head, used, 'utf8');
    used += current.write(last, used, 'utf8');
    current[used] = NEWLINE;
    this.#out.used = used + 1;
  }

  /**
   * appendFields whose last field is `last`, bytes that need no escape in COPY text (no backslash,
   * tab, newline or carriage return): copied as they are, never decoded and encoded again.
   * `fields` holds a placeholder for the last field, which is ignored.
   */
  appendFieldsWithBytes(fields: string[], last: Uint8Array): void {
    const lastIndex = fields.length - 1;
    const placeholder = fields[lastIndex]!;
    fields[lastIndex] = '';
    const head = fields.join('\t');
    fields[lastIndex] = placeholder;
    const current = this.#out.roomFor(head.length * 3 + last.length + 1);
    let used = this.#out.used;
    used += current.write(head, used, 'utf8');
    current.set(last, used);
    used += last.length;
    current[used] = NEWLINE;
    this.#out.used = used + 1;
  }

  /**
   * The rows at `indexes`, in that order, as a CopyText of their own (only a batch that holds a
   * key twice needs it). Rows are found by their newlines: COPY text escapes every newline inside
   * a value, and a row never spans two chunks.
   */
  pick(indexes: readonly number[]): CopyText {
    const rows: Buffer[] = [];
    for (const chunk of this.chunks()) {
      for (let start = 0; start < chunk.length;) {
        const end = chunk.indexOf(NEWLINE, start) + 1;
        rows.push(chunk.subarray(start, end));
        start = end;
      }
    }
    const picked = new CopyText();
    for (const index of indexes) {
      const row = rows[index];
      if (row === undefined) throw new RangeError(`no row ${index} in ${rows.length}`);
      const target = picked.#out.roomFor(row.length);
      row.copy(target, picked.#out.used);
      picked.#out.used += row.length;
    }
    return picked;
  }

  /**
   * Writes `bytes` over the start of every row: each row must begin with a field of exactly that
   * length (a placeholder written when the row was added), and `bytes` must hold no tab, newline
   * or backslash. Lets a value known only when the rows are sent (the transaction's stamp) go in
   * every row without copying the rows again.
   */
  overwriteRowStarts(bytes: Buffer): void {
    for (const chunk of this.chunks()) {
      for (let start = 0; start < chunk.length;) {
        bytes.copy(chunk, start);
        start = chunk.indexOf(NEWLINE, start + bytes.length) + 1;
        if (start === 0) break;
      }
    }
  }

  /** The filled part of every chunk, in order. */
  chunks(): Buffer[] {
    return this.#out.filled();
  }

  /** The rows as one string (for tests and diagnostics: the loader sends the chunks). */
  toString(): string {
    return Buffer.concat(this.chunks()).toString('utf8');
  }
}

/**
 * Byte chunks written row by row: a row never spans two chunks, so a batch goes to the socket as a
 * few large writes and a row can be found again within one chunk.
 */
export class ByteChunks {
  readonly #chunks: Buffer[] = [];
  #current: Buffer | undefined;
  /** Bytes written into the current chunk. */
  used = 0;

  /** How many chunks are full: the index the current chunk will have among filled(). */
  get fullCount(): number {
    return this.#chunks.length;
  }

  /** The chunk to write the next row in, with at least `room` bytes free from `used`. */
  roomFor(room: number): Buffer {
    if (this.#current !== undefined && this.#current.length - this.used >= room) {
      return this.#current;
    }
    if (this.#current !== undefined && this.used > 0) {
      this.#chunks.push(this.#current.subarray(0, this.used));
    }
    this.#current = Buffer.allocUnsafe(Math.max(COPY_CHUNK_BYTES, room));
    this.used = 0;
    return this.#current;
  }

  /** The filled part of every chunk, in order. */
  filled(): Buffer[] {
    const chunks = [...this.#chunks];
    if (this.#current !== undefined && this.used > 0) {
      chunks.push(this.#current.subarray(0, this.used));
    }
    return chunks;
  }
}

const NEWLINE = 0x0a;

/**
 * Encodes one value for COPY's text format. `null`/`undefined` become `\N`; strings escape
 * backslash, tab, newline and carriage return; a RecordJson is its text; other objects are written
 * as JSON (for jsonb columns).
 */
export function encodeCopyValue(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  let text: string;
  if (typeof value === 'string') text = value;
  else if (value instanceof RecordJson) text = value.text;
  else if (typeof value === 'number' || typeof value === 'bigint') text = String(value);
  else if (typeof value === 'boolean') return value ? 't' : 'f';
  else text = JSON.stringify(value);
  return escapeCopyText(text);
}

const COPY_SPECIAL = /[\\\t\n\r]/g;
const COPY_ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\\\',
  '\t': '\\t',
  '\n': '\\n',
  '\r': '\\r',
};

function escapeCopyText(text: string): string {
  // Most values (uuids, numbers, timestamps, records without escapes) need nothing replaced; four
  // native searches find that out (a regular expression was no faster: docs/performance.md).
  if (
    text.indexOf('\\') === -1 &&
    text.indexOf('\n') === -1 &&
    text.indexOf('\t') === -1 &&
    text.indexOf('\r') === -1
  ) {
    return text;
  }
  return text.replace(COPY_SPECIAL, (ch) => COPY_ESCAPES[ch] ?? ch);
}
