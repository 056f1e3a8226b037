import type { ReceivedRecord } from '../api/received-json.js';
import type { LoadRow } from '../db/data-loader.js';
import type { BatchLoader } from '../load/batch-loader.js';
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
  context.stats.recordsFetched += records.length;
  const normalized = normalizeRecords(
    records,
    normalize,
    { accountId: context.accountId },
    identities,
  );
  await loader.add(normalized.rows, normalized.rejects);
  return normalized;
}
