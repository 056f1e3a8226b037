import type { ReceivedRecord } from '../api/received-json.js';
import type { LoadRow } from '../db/data-loader.js';
import type { BatchLoader, BufferOptions } from '../load/batch-loader.js';
import {
  normalizeRecords,
  type NormalizedRecords,
  type Normalizer,
} from '../normalize/normalize-records.js';
import type { RunContext } from './run-context.js';

/**
 * The normalise and load stages of every stream, for records just received from the service:
 * counts them as fetched, normalises them (normalizeRecords, the one record → row-or-reject step)
 * and hands the rows and rejects to the loader. Every record a run receives goes through here, so
 * its records fetched = stored + quarantined. `identities` collects each record's identity (see
 * normalizeRecords). Returns what the records became, for a stream that decides something on it.
 */
export async function receiveRecords(
  context: RunContext,
  records: readonly ReceivedRecord[],
  normalize: Normalizer<LoadRow>,
  loader: BatchLoader,
  identities?: Set<string>,
): Promise<NormalizedRecords<LoadRow>> {
  const normalized = bufferRecords(context, records, normalize, loader, identities);
  await loader.room();
  return normalized;
}

/**
 * receiveRecords without the wait for the loader's room: the caller awaits `loader.room()` itself.
 * For the hot path of a backfill, whose pages must not be held while the loader makes room: V8
 * keeps an async function's parameters and locals across an await whether or not they are used
 * after it, so a page's parsed records held through the wait would be copied to the old
 * generation, to die there (docs/performance.md, "Pages not held through the loader's wait").
 */
export function bufferRecords(
  context: RunContext,
  records: readonly ReceivedRecord[],
  normalize: Normalizer<LoadRow>,
  loader: BatchLoader,
  identities?: Set<string>,
  options?: BufferOptions,
): NormalizedRecords<LoadRow> {
  context.stats.recordsFetched += records.length;
  const normalized = normalizeRecords(
    records,
    normalize,
    { accountId: context.accountId },
    identities,
  );
  loader.buffer(normalized.rows, normalized.rejects, options);
  return normalized;
}
