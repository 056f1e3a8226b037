import { HarnessError } from './bench-errors.js';
import { baseChildEnv, REPO_ROOT, workerScript } from './paths.js';
import { requireSuccess, runMonitored, type MonitoredRun } from './process-monitor.js';

/**
 * Workers are small scripts in bench/workers/ that do one measured job in a process of their own
 * (the fetch limit, the COPY limit, the naive reference, the loader comparison). They take their
 * input as one JSON argument and print their result as one line `BENCH_RESULT {json}`.
 */

const RESULT_PREFIX = 'BENCH_RESULT ';

/** In a worker: its input. */
export function readWorkerInput<T>(): T {
  const text = process.argv[2];
  if (text === undefined) throw new HarnessError('worker started without its JSON input');
  return JSON.parse(text) as T;
}

/** In a worker: prints the result line. */
export function writeWorkerResult(result: unknown): void {
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}

/** In a worker: runs `main`, and on failure prints the error and exits 1. */
export function runWorker(main: () => Promise<void>): void {
  main().then(
    () => {
      process.exitCode = 0;
    },
    (error: unknown) => {
      process.stderr.write(
        `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 1;
    },
  );
}

export interface WorkerRun<R> {
  readonly run: MonitoredRun;
  readonly result: R;
}

export interface StartWorkerOptions {
  readonly label: string;
  readonly timeoutMs: number;
  readonly simulatorPid?: number;
  /** Flags for node, besides the tsx loader (e.g. a larger heap). */
  readonly nodeArgs?: readonly string[];
  readonly track?: (pid: number) => () => void;
  readonly onProgress?: (line: string) => void;
}

/** Runs bench/workers/<name>.ts with `input` in its own measured process; returns its result. */
export async function runWorkerProcess<R>(
  name: string,
  input: unknown,
  options: StartWorkerOptions,
): Promise<WorkerRun<R>> {
  const run = await runMonitored({
    label: options.label,
    command: process.execPath,
    args: [
      ...(options.nodeArgs ?? []),
      '--import',
      'tsx',
      workerScript(name),
      JSON.stringify(input),
    ],
    env: baseChildEnv(),
    // `--import tsx` is resolved from the working directory.
    cwd: REPO_ROOT,
    timeoutMs: options.timeoutMs,
    ...(options.simulatorPid !== undefined ? { simulatorPid: options.simulatorPid } : {}),
    ...(options.track ? { track: options.track } : {}),
    ...(options.onProgress ? { onStderrLine: options.onProgress } : {}),
  });
  requireSuccess(run);
  const line = run.stdout
    .split('\n')
    .reverse()
    .find((candidate) => candidate.startsWith(RESULT_PREFIX));
  if (line === undefined) {
    throw new HarnessError(`${options.label} printed no result: ${run.stdout.slice(-2000)}`);
  }
  return { run, result: JSON.parse(line.slice(RESULT_PREFIX.length)) as R };
}
