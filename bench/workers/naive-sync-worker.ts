import pg from 'pg';
import { TRUNK_CALLS } from '../../src/db/table-specs.js';
import { readWorkerInput, runWorker, writeWorkerResult } from '../support/worker-protocol.js';

/**
 * The naive reference sync, written for the comparison and sharing no sync code with telesync (only
 * the table's columns and key): it pages the trunk-call list one page after the other (limit 20,
 * offset), and stores each record with its own parameterised INSERT … ON CONFLICT DO UPDATE,
 * autocommitted, through a plain pg client. This is the obvious way to write a sync, and what
 * telesync must beat tenfold.
 */

export interface NaiveSyncInput {
  baseUrl: string;
  authId: string;
  authToken: string;
  /** ISO instants, whole seconds: the range [from, to) of end_time. */
  from: string;
  to: string;
  databaseUrl: string;
  schema: string;
}

export interface NaiveSyncResult {
  rows: number;
  requests: number;
  elapsedMs: number;
}

/** The table's columns and key, from its spec: it writes the same table, so no copy to drift. */
const { columns: COLUMNS, key: KEY } = TRUNK_CALLS;

/** The record's field of each column (the service spells one with a capital). */
const FIELD: Readonly<Record<string, string>> = {
  stir_attestation: 'Stir_attestation',
};
const TIMES = new Set(['initiation_time', 'answer_time', 'end_time']);

function filterText(iso: string): string {
  return iso.replace('T', ' ').replace(/(\.\d+)?Z$/, '');
}

runWorker(async () => {
  const input = readWorkerInput<NaiveSyncInput>();
  const client = new pg.Client({ connectionString: input.databaseUrl });
  await client.connect();
  const placeholders = COLUMNS.map((_, index) => `$${index + 1}`).join(', ');
  const updates = COLUMNS.filter((column) => !KEY.includes(column))
    .map((column) => `${column} = EXCLUDED.${column}`)
    .join(', ');
  const insert =
    `INSERT INTO "${input.schema}".trunk_calls (${COLUMNS.join(', ')}) VALUES (${placeholders}) ` +
    `ON CONFLICT (${KEY.join(', ')}) DO UPDATE SET ${updates}, synced_at = now()`;
  const authorization = `Basic ${Buffer.from(`${input.authId}:${input.authToken}`).toString('base64')}`;

  let rows = 0;
  let requests = 0;
  const started = performance.now();
  try {
    for (let offset = 0; ; offset += 20) {
      const query = new URLSearchParams({
        end_time__gte: filterText(input.from),
        end_time__lt: filterText(input.to),
        limit: '20',
        offset: String(offset),
      });
      const response = await fetch(
        `${input.baseUrl}/v1/Account/${input.authId}/Trunk/Call/?${query.toString()}`,
        { headers: { authorization } },
      );
      requests++;
      if (!response.ok) throw new Error(`page ${offset} answered ${response.status}`);
      const page = (await response.json()) as {
        meta: { total_count: number };
        objects: Record<string, unknown>[];
      };
      for (const record of page.objects) {
        const values = COLUMNS.map((column) => {
          if (column === 'account_id') return input.authId;
          if (column === 'raw') return JSON.stringify(record);
          const value = record[FIELD[column] ?? column];
          if (value === undefined || (TIMES.has(column) && value === '')) return null;
          return value;
        });
        await client.query(insert, values);
        rows++;
      }
      if (offset + 20 >= page.meta.total_count) break;
    }
  } finally {
    await client.end();
  }
  const result: NaiveSyncResult = { rows, requests, elapsedMs: performance.now() - started };
  writeWorkerResult(result);
});
