import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.js';
import type { StreamName } from '../domain/streams.js';
import {
  advanceWatermark,
  advanceWatermarkFromLedger,
} from '../db/repositories/sync-state-repository.js';
import {
  recordWindowChanges,
  type WindowChange,
} from '../db/repositories/sync-windows-repository.js';
import { BatchLoader, type CommitBatch } from '../load/batch-loader.js';
import { describeError } from '../util/coerce-error.js';
import { forEachConcurrently } from '../util/for-each-concurrently.js';
import { isStopped } from '../util/stopped-error.js';
import type { RunContext } from './run-context.js';
import type { RunMode, StreamDefinition, UnitCommit, WatermarkRule } from './stream-definition.js';
import type { BackfillPlan } from './window-planner.js';

/**
 * The one runner of every stream: plans the units of `mode`, reads them through one loader (the
 * stream's batching), and owns what is the same for all of them. Stopping: the run's signal is
 * looked at before each unit and each round, and a stop thrown by a unit stops the run after the
 * round in hand commits. Failure: an error the stream `failsAlone` accepts fails its unit and is
 * kept for the run's end; any other fails the run. Counters: units planned. Ledger and watermark:
 * a unit completes through the UnitCommit it is given, and the runner writes its ledger row and
 * the watermark the plan declared in the transaction of the unit's last rows. At the end,
 * everything queued is written; a run that neither stopped nor failed then `finish`es.
 */
export async function runUnits<Unit>(
  run: RunContext,
  stream: StreamDefinition<Unit>,
  mode: RunMode,
): Promise<BackfillPlan | undefined> {
  const plan = await stream.plan(run, mode);
  const loader = new BatchLoader(run, stream.table, stream.batching(run));
  const commit = unitCommit(run, stream.name, loader, plan.watermark);
  let stopped = false;
  const readUnit = async (unit: Unit): Promise<void> => {
    if (stopped || run.signal?.aborted === true) {
      stopped = true;
      return;
    }
    try {
      await stream.readUnit(run, unit, loader, commit);
    } catch (error) {
      const stop = isStopped(error);
      const alone = !stop && stream.failsAlone?.(error) === true;
      await stream.abandonUnit?.(
        run,
        unit,
        loader,
        stop ? { stopped: true } : { stopped: false, error },
      );
      if (stop) stopped = true;
      else if (alone) run.stats.failures.push(describeError(error));
      else throw error;
    }
  };
  try {
    for await (const units of plan.rounds) {
      run.stats.windowsPlanned += units.length;
      await forEachConcurrently(units, plan.concurrency ?? 1, readUnit);
      await plan.endRound?.(loader);
      if (stopped) break;
    }
  } catch (error) {
    // A stream that plans in rounds stops between them.
    if (!isStopped(error)) throw error;
    stopped = true;
  }
  if (stopped) run.stats.stopped = true;
  await loader.drain();
  if (!run.stats.stopped && run.stats.failures.length === 0) await plan.finish?.();
  return plan.backfill;
}

/**
 * How the units of one run commit: the unit's hook, then the watermark of `rule`, in the
 * transaction of its last rows; a window's ledger changes through one batch for the run, so the
 * windows that share a transaction are written by one statement and move the watermark once.
 */
function unitCommit(
  run: RunContext,
  stream: StreamName,
  loader: BatchLoader,
  rule: WatermarkRule | undefined,
): UnitCommit {
  const key = { accountId: run.accountId, stream };
  const moveWatermark = async (trx: Kysely<Tables>, syncedAt: string): Promise<void> => {
    if (rule?.kind === 'commit-time')
      await advanceWatermark(trx, key.accountId, key.stream, syncedAt);
    else if (rule?.kind === 'ledger') await advanceWatermarkFromLedger(trx, key, rule.pass);
  };
  const ledger: CommitBatch<WindowChange> = {
    async write(trx, changes, syncedAt) {
      await recordWindowChanges(trx, run.database.schema, key, changes);
      if (changes.some((change) => change.kind === 'complete')) await moveWatermark(trx, syncedAt);
    },
  };
  return {
    commit: (hook) =>
      loader.commit(async (trx, syncedAt) => {
        if ((await hook?.(trx, syncedAt)) !== false) await moveWatermark(trx, syncedAt);
      }),
    queueWindowChange: (change, onCommitted) => loader.queueBatched(ledger, change, onCommitted),
  };
}
