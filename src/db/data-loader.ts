import { createHash } from 'node:crypto';
import { CopyBinary } from './copy-binary.js';
import { CopyPayload, CopyText, encodeCopyValue, type CopyBytes } from './copy-payload.js';
import {
  loadConnectionOf,
  type LoadConnection,
  type TransactionRunner,
} from './load-connection.js';
import { qualifiedName, quoteIdent } from './identifiers.js';
import { parseEpochMicros } from '../util/micros.js';
import { RecordJson } from '../util/record-json.js';
import { VOLATILE_RAW_KEYS, type DataTableSpec } from './table-specs.js';

/*
 * Upserts of normalised rows into the data tables, through the loading port (LoadConnection): COPY
 * into a staging table then one INSERT … SELECT … ON CONFLICT, or, for rows most likely new, a COPY
 * straight into the table. An existing row is rewritten only when its content changed (its raw
 * record, less the request ids, differs), so re-syncs make no dead tuples and `changed_at` means
 * "the service changed this record".
 */

export interface UpsertResult {
  /** Rows handed to the upsert after removing repeats of a key within the batch. */
  readonly upserted: number;
  /** Rows inserted, or rewritten because their content changed. */
  readonly written: number;
  /**
   * How a batch asked to go directly into the table went (UpsertOptions.direct): 'written', or
   * 'conflict' when the table held one of its keys already and the batch was upserted instead.
   * Absent when the batch was not tried that way.
   */
  readonly direct?: 'written' | 'conflict';
}

export interface UpsertOptions {
  /**
   * Try the batch as a plain COPY into the table first, inside a savepoint: for rows the table
   * most likely holds none of yet (a window read for the first time), it saves the server the
   * staging table and the upsert, most of its CPU per row. A unique violation rolls back to the
   * savepoint and the batch is upserted as usual, so a re-read changes nothing. Only for tables
   * that are not snapshots; otherwise ignored.
   */
  readonly direct?: boolean;
}

/**
 * The placeholder each row of a directly loadable batch starts with, overwritten by the batch's
 * stamp (its synced_at) when it is sent: ISO 8601 with six fraction digits, always this long.
 */
const STAMP_PLACEHOLDER = '1970-01-01T00:00:00.000000Z';
const DIRECT_SAVEPOINT = 'telesync_direct_copy';
const UNIQUE_VIOLATION = '23505';

/** A row as a normaliser makes it: column → value. */
export type LoadRow = Readonly<Record<string, unknown>>;

/**
 * Rows made ready for loading as they are buffered: each row in the batch's COPY data (text, or
 * binary for a table whose spec gives its column types), and its key. A batch waits a fraction of a
 * second or more before it is written: its COPY data is bytes outside the JavaScript heap, a
 * third the size of the row objects with their strings and nothing for the collector to trace, so
 * a backfill's heap stays small without extra full collections.
 */
export class PreparedRows {
  /** Each row's key columns, joined: the last row of a key wins. */
  readonly keys: string[] = [];
  /** The rows in COPY's binary format for a table whose spec gives its column types, else text. */
  readonly copy: CopyBinary | CopyText;
  /**
   * Whether each row starts with a synced_at field (a placeholder until sent), so the same data
   * can go into the table itself (UpsertOptions.direct) or into the staging table.
   */
  readonly stamped: boolean;
  /** One row's values (binary) or encoded fields (text), reused row after row. */
  readonly #row: unknown[] | string[];

  constructor(readonly spec: DataTableSpec) {
    this.stamped = !spec.snapshot;
    const width = spec.columns.length + (this.stamped ? 1 : 0);
    const copyTypes = spec.copyTypes;
    if (copyTypes !== undefined) {
      const types = spec.columns.map((column) => {
        const type = copyTypes[column];
        if (type === undefined) throw new Error(`${spec.table}.${column} has no COPY type`);
        return type;
      });
      this.copy = new CopyBinary(this.stamped ? ['timestamptz', ...types] : types);
      // The placeholder stamp as epoch microseconds: written without reading a text per row.
      this.#row = new Array<unknown>(width).fill(0);
    } else {
      this.copy = new CopyText();
      this.#row = new Array<string>(width).fill('');
      if (this.stamped) this.#row[0] = STAMP_PLACEHOLDER;
    }
  }

  /** The quoted columns of the COPY data's fields, in order. */
  copyColumns(): string[] {
    const columns = this.spec.columns.map(quoteIdent);
    return this.stamped ? [quoteIdent('synced_at'), ...columns] : columns;
  }

  /** COPY's options for the data (CopyPayload.options). */
  get copyOptions(): string {
    return this.copy instanceof CopyBinary ? 'FORMAT binary' : '';
  }

  get length(): number {
    return this.keys.length;
  }

  /** Adds `row`, whose key (`rowKey`) the caller may have computed already. */
  add(row: LoadRow, key: string = rowKey(row, this.spec.key)): void {
    this.keys.push(key);
    const columns = this.spec.columns;
    const offset = this.stamped ? 1 : 0;
    if (this.copy instanceof CopyBinary) {
      const values = this.#row;
      for (let c = 0; c < columns.length; c++) values[c + offset] = row[columns[c]!];
      this.copy.append(values);
      // The last value is often a view of its page's body: not kept alive until the next row.
      values[values.length - 1] = null;
      return;
    }
    const copyText = this.copy;
    const fields = this.#row as string[];
    const lastColumn = columns.length - 1;
    for (let c = 0; c < lastColumn; c++) fields[c + offset] = encodeCopyValue(row[columns[c]!]);
    // The last column is the record's raw JSON: its bytes as received when COPY takes them so.
    const last = row[columns[lastColumn]!];
    if (last instanceof RecordJson && last.plainBytes) {
      copyText.appendFieldsWithBytes(fields, last.bytes);
      return;
    }
    fields[lastColumn + offset] = encodeCopyValue(last);
    copyText.appendFields(fields);
    // The last field is often a slice of its page's whole text: not kept alive until the next row.
    fields[fields.length - 1] = '';
  }

  /**
   * Writes `syncedAt` (ISO 8601 in UTC) as every row's synced_at; false when it cannot be written
   * in place (then the rows keep their placeholder and must not be sent as they are).
   */
  stampRows(syncedAt: string): boolean {
    if (!this.stamped) return false;
    if (this.copy instanceof CopyBinary) {
      const micros = parseEpochMicros(syncedAt);
      if (micros === undefined) return false;
      this.copy.overwriteFirstTimestamps(micros);
      return true;
    }
    const stamp = fixedStamp(syncedAt);
    if (stamp === undefined) return false;
    this.copy.overwriteRowStarts(stamp);
    return true;
  }

  /** The COPY data of the rows at `indexes` (all of them when undefined), in that order. */
  copyData(indexes?: readonly number[]): CopyBytes {
    return indexes === undefined ? this.copy : this.copy.pick(indexes);
  }
}

/**
 * The key columns of `row` joined into one flat string (a separator no identifier contains; a join,
 * so the key holds no reference to the page text its parts may have been cut from).
 */
export function rowKey(row: LoadRow, key: readonly string[]): string {
  const parts = new Array<string>(key.length);
  for (let index = 0; index < key.length; index++) parts[index] = String(row[key[index]!]);
  return parts.join('\u0001');
}

/**
 * Upserts `rows` into the table of `spec` in the caller's transaction. `syncedAt` (ISO text)
 * stamps inserted and changed rows; for snapshot tables it is also the `last_seen_at` of every row.
 * When a batch holds the same key twice, the last row wins.
 */
export async function upsertDataRows(
  trx: TransactionRunner,
  schema: string,
  spec: DataTableSpec,
  rows: readonly LoadRow[],
  syncedAt: string,
  options: UpsertOptions = {},
): Promise<UpsertResult> {
  const prepared = new PreparedRows(spec);
  for (const row of rows) prepared.add(row);
  return upsertPreparedRows(await loadConnectionOf(trx), schema, prepared, syncedAt, options);
}

/** `upsertDataRows` for rows prepared already, through the port of the transaction's connection. */
export async function upsertPreparedRows(
  load: LoadConnection,
  schema: string,
  prepared: PreparedRows,
  syncedAt: string,
  options: UpsertOptions = {},
): Promise<UpsertResult> {
  const { spec } = prepared;
  const unique = lastIndexPerKey(prepared.keys);
  if (unique.length === 0) return { upserted: 0, written: 0 };
  let direct: UpsertResult['direct'];
  // A batch holding a key twice would conflict with itself: upserted, so the last row wins.
  if (
    options.direct === true &&
    unique.length === prepared.length &&
    prepared.stampRows(syncedAt)
  ) {
    const target = qualifiedName(schema, spec.table);
    try {
      // The savepoint goes in the COPY's message (no round trip of its own). It is left open: a
      // transaction writes one batch, and the subtransaction ends with it.
      const copied = await load.copyIn(
        new CopyPayload(
          target,
          prepared.copyColumns(),
          prepared.copyData(),
          [`SAVEPOINT ${DIRECT_SAVEPOINT}`],
          [],
          prepared.copyOptions,
        ),
      );
      return { upserted: unique.length, written: copied, direct: 'written' };
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code !== UNIQUE_VIOLATION) throw error;
      await load.run(`ROLLBACK TO SAVEPOINT ${DIRECT_SAVEPOINT}`, []);
      direct = 'conflict';
    }
  }
  const staging = stagingTableName(schema, spec.table);
  const createStaging =
    `CREATE TEMP TABLE IF NOT EXISTS ${quoteIdent(staging)} ` +
    `(LIKE ${qualifiedName(schema, spec.table)} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS`;
  const before: string[] = [];
  const data = prepared.copyData(unique.length === prepared.length ? undefined : unique);
  // ON COMMIT DELETE ROWS empties the staging table at commit, so only a second batch in the
  // same transaction finds rows there (the first one's): emptied first then, and only then, since
  // with many accounts loading small batches each statement counts. DELETE, not TRUNCATE:
  // TRUNCATE gives the table a new file and so changes the catalog, which every other session
  // must then catch up with. The emptying and the table's creation (`sessionSetup`: once a
  // session) go with the COPY, in its message.
  if (load.stagedInTransaction.has(staging)) before.push(`DELETE FROM ${quoteIdent(staging)}`);
  load.stagedInTransaction.add(staging);
  await load.copyIn(
    new CopyPayload(
      quoteIdent(staging),
      prepared.copyColumns(),
      data,
      before,
      [createStaging],
      prepared.copyOptions,
    ),
  );
  // Prepared: the same text every batch, whose parsing and planning cost the server about 0.3 ms
  // of CPU a batch (docs/scaling.md, "The cost of a loading transaction").
  const result = await load.run<{ written: boolean }>(
    buildUpsertSql(schema, spec, staging),
    [syncedAt],
    { prepared: true },
  );
  // Snapshot rows are all touched (last_seen_at), so count those whose synced_at is this batch's.
  const written = spec.snapshot
    ? result.rows.filter((row) => row.written).length
    : Number(result.numAffectedRows ?? 0n);
  return direct === undefined
    ? { upserted: unique.length, written }
    : { upserted: unique.length, written, direct };
}

/**
 * `syncedAt` (ISO 8601 in UTC) as the bytes of STAMP_PLACEHOLDER's form, or undefined when it
 * cannot take that form (then the batch is not sent directly).
 */
function fixedStamp(syncedAt: string): Buffer | undefined {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?Z$/.exec(syncedAt);
  if (match === null) return undefined;
  const stamp = `${match[1]}.${(match[2] ?? '').padEnd(6, '0')}Z`;
  return stamp.length === STAMP_PLACEHOLDER.length ? Buffer.from(stamp, 'latin1') : undefined;
}

/**
 * The upsert statement from the staging table `staging`; $1 is the batch's synced_at. Pure:
 * exposed for tests.
 */
export function buildUpsertSql(schema: string, spec: DataTableSpec, staging: string): string {
  const target = qualifiedName(schema, spec.table);
  const columns = spec.columns.map(quoteIdent);
  const bookkeeping = spec.snapshot
    ? ['synced_at', 'first_seen_at', 'last_seen_at'].map(quoteIdent)
    : [quoteIdent('synced_at')];
  const stamps = bookkeeping.map(() => '$1::timestamptz');
  const values = `SELECT ${[...columns, ...stamps].join(', ')} FROM ${quoteIdent(staging)}`;
  const changed = rawChanged(spec);
  const keys = new Set<string>(spec.key);
  const assignments = spec.columns
    .filter((column) => !keys.has(column))
    .map((column) => `${quoteIdent(column)} = EXCLUDED.${quoteIdent(column)}`);
  const conflict = `ON CONFLICT (${spec.key.map(quoteIdent).join(', ')}) DO UPDATE SET`;
  const insert = `INSERT INTO ${target} AS t (${[...columns, ...bookkeeping].join(', ')}) ${values} ${conflict}`;
  if (!spec.snapshot) {
    return `${insert} ${[...assignments, '"synced_at" = EXCLUDED."synced_at"', '"changed_at" = EXCLUDED."synced_at"'].join(', ')} WHERE ${changed}`;
  }
  // Every row of a snapshot is seen (last_seen_at, deleted_at); only a changed one is re-stamped.
  return `${insert} ${[
    ...assignments,
    '"last_seen_at" = EXCLUDED."last_seen_at"',
    '"deleted_at" = NULL',
    `"synced_at" = CASE WHEN ${changed} THEN EXCLUDED."synced_at" ELSE t."synced_at" END`,
    `"changed_at" = CASE WHEN ${changed} THEN EXCLUDED."synced_at" ELSE t."changed_at" END`,
  ].join(', ')} RETURNING (t."synced_at" = $1::timestamptz) AS written`;
}

/**
 * Whether the stored row's raw differs from the proposed one (EXCLUDED) beyond VOLATILE_RAW_KEYS,
 * compared as jsonb. A `json` raw is first compared as text with each volatile key's member
 * (`"api_id":"<its column's value>"`) taken out: a re-read of an unchanged record from the same
 * service is the same text but for that, and the text comparison costs the server a tenth of
 * parsing both sides; any other difference (spacing, key order, escapes) goes to the jsonb one.
 */
function rawChanged(spec: DataTableSpec): string {
  const keys = sqlTextArray(VOLATILE_RAW_KEYS);
  const asJsonb = `(t.raw::jsonb - ${keys}) IS DISTINCT FROM (EXCLUDED.raw::jsonb - ${keys})`;
  if (spec.rawType !== 'json') return asJsonb;
  const withoutVolatile = (row: string): string =>
    VOLATILE_RAW_KEYS.reduce(
      (text, key) =>
        `replace(${text}, ${sqlText(`"${key}":"`)} || ${row}.${quoteIdent(key)} || '"', '')`,
      `${row}.raw::text`,
    );
  // CASE, not AND: the text comparison must come first, and a null (no such column value) falls
  // through to the jsonb one.
  return `(CASE WHEN ${withoutVolatile('t')} = ${withoutVolatile('EXCLUDED')} THEN false ELSE ${asJsonb} END)`;
}

function sqlText(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

function sqlTextArray(values: readonly string[]): string {
  return `ARRAY[${values.map((value) => `'${value.replaceAll("'", "''")}'`).join(', ')}]::text[]`;
}

/** Temp tables are per session; the name is per schema so two schemas never share one. */
function stagingTableName(schema: string, table: string): string {
  return `stage_${createHash('sha1').update(schema).digest('hex').slice(0, 10)}_${table}`;
}

/** The index of the last row of each key, in the order of those rows. */
function lastIndexPerKey(keys: readonly string[]): number[] {
  const lastOf = new Map<string, number>();
  for (let index = 0; index < keys.length; index++) lastOf.set(keys[index]!, index);
  if (lastOf.size === keys.length) return keys.map((_, index) => index);
  return [...lastOf.values()].sort((x, y) => x - y);
}
