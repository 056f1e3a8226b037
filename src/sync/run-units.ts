import { BatchLoader } from '../load/batch-loader.js';
import { describeError } from '../util/coerce-error.js';
import { forEachConcurrently } from '../util/for-each-concurrently.js';
import { isStopped } from '../util/stopped-error.js';
import type { RunContext } from './run-context.js';
import type { RunMode, StreamDefinition } from './stream-definition.js';
import type { BackfillPlan } from './window-planner.js';

/**
 * The one runner of every stream: plans the units of `mode`, reads them through one loader (the
 * stream's batching), and owns what is the same for all of them. Stopping: the run's signal is
 * looked at before each unit and each round, and a stop thrown by a unit stops the run after the
 * round in hand commits. Failure: an error the stream `failsAlone` accepts fails its unit and is
 * kept for the run's end; any other fails the run. Counters: units planned. At the end, everything
 * queued is written; a run that neither stopped nor failed then `finish`es.
 */
export async function runUnits<Unit>(
  run: RunContext,
  stream: StreamDefinition<Unit>,
  mode: RunMode,
): Promise<BackfillPlan | undefined> {
  const plan = await stream.plan(run, mode);
  const loader = new BatchLoader(run, stream.table, stream.batching(run));
  let stopped = false;
  const readUnit = async (unit: Unit): Promise<void> => {
    if (stopped || run.signal?.aborted === true) {
      stopped = true;
      return;
    }
    try {
      await stream.readUnit(run, unit, loader);
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
