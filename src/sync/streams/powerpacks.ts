import { POWERPACK_REFS } from '../../db/repositories/lookup-queue-repository.js';
import {
  queueReferencedPowerpacks,
  requeueStalePowerpacks,
} from '../../db/repositories/powerpack-refs-repository.js';
import { POWERPACKS } from '../../db/table-specs.js';
import { normalizePowerpack } from '../../normalize/normalize-powerpack.js';
import { formatIsoMicros, MICROS_PER_HOUR } from '../../util/micros.js';
import { lookupStream } from './lookups.js';

/**
 * The sender packs stored messages reference: before the queue is read, packs referenced and not
 * queued yet are queued, and packs fetched longer ago than the refresh age go back in the queue.
 */
export const POWERPACKS_STREAM = lookupStream({
  name: 'powerpacks',
  description: 'sender packs referenced by stored messages',
  table: POWERPACKS,
  defaultSchedule: '*/5 * * * *',
  queue: POWERPACK_REFS,
  noun: 'sender pack',
  fetch: async (run, key, options) => [await run.client.getPowerpack(key, options)],
  normalize: normalizePowerpack,
  async beforePlan(run) {
    const { db, schema } = run.database;
    await queueReferencedPowerpacks(db, schema, run.accountId);
    const staleBefore = formatIsoMicros(
      run.now() - run.settings.powerpackRefreshHours * MICROS_PER_HOUR,
    );
    await requeueStalePowerpacks(db, run.accountId, staleBefore);
  },
  // The packs referenced by new messages, and stale ones, are queued by the run itself.
  unknownInPreview: 1,
});
