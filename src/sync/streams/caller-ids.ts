import { VERIFIED_CALLER_IDS } from '../../db/table-specs.js';
import { normalizeVerifiedCallerId } from '../../normalize/normalize-verified-caller-id.js';
import { snapshotStream } from './snapshots.js';

/** Every verified caller ID, each run; those gone from the service are marked deleted. */
export const CALLER_IDS_STREAM = snapshotStream({
  name: 'caller_ids',
  description: 'verified caller IDs (full snapshot)',
  table: VERIFIED_CALLER_IDS,
  defaultSchedule: '0 * * * *',
  noun: 'verified caller IDs',
  fetch: (run, options) => run.client.iterateVerifiedCallerIds({}, options),
  normalize: normalizeVerifiedCallerId,
});
