import { SIP_ENDPOINTS } from '../../db/table-specs.js';
import { normalizeSipEndpoint } from '../../normalize/normalize-sip-endpoint.js';
import { snapshotStream } from './snapshots.js';

/** Every SIP endpoint, each run; those gone from the service are marked deleted. */
export const ENDPOINTS_STREAM = snapshotStream({
  name: 'endpoints',
  description: 'SIP endpoints (full snapshot)',
  table: SIP_ENDPOINTS,
  defaultSchedule: '0 * * * *',
  noun: 'SIP endpoints',
  fetch: (run, options) => run.client.iterateEndpoints(options),
  normalize: normalizeSipEndpoint,
});
