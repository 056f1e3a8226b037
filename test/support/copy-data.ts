import type { CopyBytes } from '../../src/db/copy-payload.js';

/** COPY data as one UTF-8 text (the text format's lines). */
export function copyText(data: CopyBytes): string {
  return Buffer.concat(data.chunks()).toString('utf8');
}

/**
 * The rows of COPY binary data, each as its fields' bytes (null for SQL null). Throws when the
 * data is not the binary format's header, rows and trailer, and nothing after.
 */
export function binaryRows(data: CopyBytes): (Buffer | null)[][] {
  const bytes = Buffer.concat(data.chunks());
  if (bytes.subarray(0, 11).toString('latin1') !== 'PGCOPY\n\xff\r\n\0') {
    throw new Error('not COPY binary: no signature');
  }
  const rows: (Buffer | null)[][] = [];
  let at = 19;
  for (;;) {
    const count = bytes.readInt16BE(at);
    at += 2;
    if (count === -1) break;
    const fields: (Buffer | null)[] = [];
    for (let index = 0; index < count; index++) {
      const length = bytes.readInt32BE(at);
      at += 4;
      fields.push(length === -1 ? null : bytes.subarray(at, at + length));
      if (length > 0) at += length;
    }
    rows.push(fields);
  }
  if (at !== bytes.length) throw new Error(`COPY binary: ${bytes.length - at} bytes after the end`);
  return rows;
}
