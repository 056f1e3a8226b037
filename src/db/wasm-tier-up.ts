import { setV8FlagUnlessChosen } from '../util/v8-flag.js';

/**
 * How long V8 runs a WebAssembly function in its baseline code before compiling it again, optimised
 * (in its own measure, about the bytes of code executed; V8's default is 13,000,000).
 *
 * PGlite is PostgreSQL compiled to WebAssembly. With V8's default, the few queries of a command such
 * as `telesync status` send one of its largest functions to the optimising compiler, a compile of
 * seconds and hundreds of megabytes that the process, its work done, waits for before it can exit.
 * With this budget a short command ends before anything is optimised, and the functions a backfill
 * keeps busy are still optimised early in it (docs/performance.md, "PGlite optimised only where it
 * runs long").
 */
export const WASM_TIERING_BUDGET = 2_000_000_000;

/**
 * Applies WASM_TIERING_BUDGET unless node was started with a budget of its own. V8 gives each
 * function its budget when the module is instantiated, so this goes before PGlite's.
 */
export function delayWasmTierUp(execArgv: readonly string[] = process.execArgv): void {
  setV8FlagUnlessChosen('--wasm-tiering-budget', WASM_TIERING_BUDGET, execArgv);
}
