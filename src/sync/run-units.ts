import type { Kysely } from 'kysely';
import { ApiError } from '../api/api-errors.js';
import type { Tables } from '../db/schema.js';
import {
  advanceWatermark,
  advanceWatermarkFromLedger,
} from '../db/repositories/sync-state-repository.js';
import {
  recordWindowChanges,
  type WindowChange,
} from '../db/repositories/sync-windows-repository.js';
import type { LedgerKey } from '../domain/ledger-entry.js';
import { BatchLoader, type CommitBatch } from '../load/batch-loader.js';
import { describeError } from '../util/coerce-error.js';
import { forEachConcurrently } from '../util/for-each-concurrently.js';
import { isStopped } from '../util/stopped-error.js';
import type { RunContext } from './run-context.js';
import type {
  LedgerSlot,
  RunMode,
  StreamDefinition,
  UnitCommit,
  WatermarkRule,
} from './stream-definition.js';
import { describeWindow, type BackfillPlan } from './window-planner.js';

/**
 * The one runner of every stream: plans the units of `mode`, reads them through one loader (the
 * stream's batching), and owns what is the same for all of them. Stopping: the run's signal is
 * looked at before each unit and each round, and a stop thrown by a unit stops the run after the
 * round in hand commits. Failure: an error the stream `failsAlone` accepts fails its unit and is
 * kept for the run's end; any other fails the run. Counters: units planned, and units completed
 * as their commits land. Ledger and watermark: for a stream whose units have ledger slots, the
 * runner writes every sync_windows row (planned, running, complete, failed, restored), and the
 * watermark the plan declared in the transaction of a unit's last rows. At the end, everything
 * queued is written; a run that neither stopped nor failed then `finish`es.
 */
export async function runUnits<Unit>(
  run: RunContext,
  stream: StreamDefinition<Unit>,
  mode: RunMode,
): Promise<BackfillPlan | undefined> {
  const plan = await stream.plan(run, mode);
  const loader = new BatchLoader(run, stream.table, stream.batching(run));
  const key: LedgerKey = { accountId: run.accountId, stream: stream.name };
  const commit = unitCommit(run, key, loader, plan.watermark);
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
      const slot = stream.ledgerSlot?.(unit);
      if (slot !== undefined)
        await abandonSlot(run, key, loader, slot, error, stop ? undefined : alone);
      if (stop) stopped = true;
      else if (alone) run.stats.failures.push(describeError(error));
      else throw error;
    }
  };
  try {
    for await (const units of plan.rounds) {
      run.stats.windowsPlanned += units.length;
      // Slots with no row yet go in as planned: the ledger shows the whole run from its start.
      const planned = units.flatMap((unit): WindowChange[] => {
        const slot = stream.ledgerSlot?.(unit);
        return slot && slot.status === undefined ? [{ kind: 'planned', window: slot.window }] : [];
      });
      await recordWindowChanges(run.database.db, run.database.schema, key, planned);
      await forEachConcurrently(units, plan.concurrency ?? 1, readUnit);
      await plan.endRound?.(commit);
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
 * What a unit cut short leaves in its ledger slot: stopped (`failedAlone` undefined), the status
 * it had before the run; failed, the reason. The unit's running mark may still wait in the
 * loader: it goes first, so that this is the slot's last word (a loader failure is kept for the
 * run's last drain).
 */
async function abandonSlot(
  run: RunContext,
  key: LedgerKey,
  loader: BatchLoader,
  { window, status }: LedgerSlot,
  error: unknown,
  failedAlone: boolean | undefined,
): Promise<void> {
  await loader.drain().catch(() => undefined);
  const { database, runId } = run;
  if (failedAlone === undefined) {
    await recordWindowChanges(database.db, database.schema, key, [
      { kind: 'restored', slotStart: window.slotStart, status: status ?? 'planned', runId },
    ]);
    return;
  }
  const message = describeError(error);
  // An error that ends the run is said by the run's own line; the window's is for debugging.
  const level = failedAlone ? 'error' : 'debug';
  run.log[level]({ window: describeWindow(window), err: error }, `window failed: ${message}`);
  try {
    await recordWindowChanges(database.db, database.schema, key, [
      { kind: 'failed', slotStart: window.slotStart, error: message, runId },
    ]);
  } catch (ledgerError) {
    // The database itself may be what failed; the run's error says so already.
    run.log.warn({ err: ledgerError }, 'could not record the window failure in sync_windows');
  }
  if (error instanceof ApiError && error.status === 400) {
    run.log.error(
      'the service refused a window request; this is a bug in telesync or a change at the service',
    );
  }
}

/**
 * How the units of one run commit: the unit's hook, then the watermark of `rule`, in the
 * transaction of its last rows; a window's ledger changes through one batch for the run, so the
 * windows that share a transaction are written by one statement and move the watermark once. A
 * unit counts as completed when its commit lands.
 */
function unitCommit(
  run: RunContext,
  key: LedgerKey,
  loader: BatchLoader,
  rule: WatermarkRule | undefined,
): UnitCommit {
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
  const completed = (units: number) => () => (run.stats.windowsCompleted += units);
  return {
    async commit(hook, units = 1) {
      let kept = true;
      await loader.commit(async (trx, syncedAt) => {
        kept = (await hook?.(trx, syncedAt)) !== false;
        if (kept) await moveWatermark(trx, syncedAt);
      });
      if (kept) completed(units)();
    },
    queueWindowChange: (change) =>
      loader.queueBatched(ledger, change, change.kind === 'complete' ? completed(1) : undefined),
    alreadyComplete: completed(1),
  };
}
