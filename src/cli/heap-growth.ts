import { setV8FlagUnlessChosen } from '../util/v8-flag.js';

/**
 * How far V8 lets the old generation grow past its live size before the next full collection.
 *
 * A backfill promotes every buffered batch to the old generation (its rows wait about half a
 * second between fetch and commit) and drops it a moment later. V8 lets the old generation reach up
 * to four times its live size before collecting it; three times lowers a backfill's peak resident
 * memory at no measurable cost, and tighter limits cost the collector more CPU than they save
 * (docs/performance.md, "The old generation collected at three times its live size").
 */
export const HEAP_GROWING_PERCENT = 200;

const FLAG = '--heap-growing-percent';

/**
 * Sets HEAP_GROWING_PERCENT unless node was started with a growing factor of its own
 * (`node --heap-growing-percent=… bin/telesync.js`). The growing factor is read at each full collection, so setting it after
 * start-up takes effect (unlike the heap size limits, which are fixed when the heap is made).
 */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): void {
  setV8FlagUnlessChosen(FLAG, HEAP_GROWING_PERCENT, execArgv);
}
