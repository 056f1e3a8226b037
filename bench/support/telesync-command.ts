import { HarnessError } from './bench-errors.js';
import { baseChildEnv, createScratchDir, telesyncInvocation } from './paths.js';
import { requireSuccess, runMonitored, type MonitoredRun } from './process-monitor.js';
import type { RunBackendsCpu } from './run-backends.js';
import type { SimulatorProcess } from './simulator-process.js';

/**
 * Runs the real `telesync` command (bin/telesync, as npm installs it) as a measured child process, in an
 * empty working directory and with only the settings given.
 */

export interface TelesyncSettings {
  readonly databaseUrl: string;
  readonly schema: string;
  readonly simulator: SimulatorProcess;
  /** Where telesync sends its requests, when not straight to the simulator (a logging proxy). */
  readonly baseUrl?: string;
  /** TELESYNC_MAX_RPS, when the run sets the rate that way (the budget's settings go in extraEnv). */
  readonly maxRps?: number;
  /** TELESYNC_CONCURRENCY. */
  readonly concurrency: number;
  /** Any other TELESYNC_* settings. */
  readonly extraEnv?: Readonly<Record<string, string>>;
}

/**
 * The request budget settings of a throttled run: the simulator's limit as the service's budget,
 * and the share of it telesync may use.
 */
export function budgetEnv(
  rateLimit: { readonly requests: number; readonly windowSeconds: number },
  sharePercent: number,
): Record<string, string> {
  return {
    TELESYNC_REQUEST_BUDGET: `${rateLimit.requests}/${rateLimit.windowSeconds}s`,
    TELESYNC_REQUEST_SHARE: `${sharePercent}%`,
  };
}

export function telesyncEnv(settings: TelesyncSettings): Record<string, string> {
  return {
    ...baseChildEnv(),
    DATABASE_URL: settings.databaseUrl,
    TELESYNC_SCHEMA: settings.schema,
    TELESYNC_BASE_URL: settings.baseUrl ?? settings.simulator.url,
    TELESYNC_AUTH_ID: settings.simulator.account.authId,
    TELESYNC_AUTH_TOKEN: settings.simulator.account.authToken,
    ...(settings.maxRps === undefined ? {} : { TELESYNC_MAX_RPS: String(settings.maxRps) }),
    TELESYNC_CONCURRENCY: String(settings.concurrency),
    TELESYNC_LOG_LEVEL: 'warn',
    ...settings.extraEnv,
  };
}

export interface TelesyncRun extends MonitoredRun {
  /** The last JSON line of stdout (the commands run with --json). */
  readonly json: Record<string, unknown>;
}

export interface RunTelesyncOptions {
  readonly label: string;
  readonly timeoutMs: number;
  /** Flags for node itself, e.g. --cpu-prof. */
  readonly nodeArgs?: readonly string[];
  readonly track?: (pid: number) => () => void;
  readonly onProgress?: (line: string) => void;
  /** The checkout whose command runs (another commit's, for a comparison); default this one. */
  readonly root?: string;
  /** Measures the PostgreSQL backends serving the command. */
  readonly backends?: RunBackendsCpu;
}

/**
 * Runs `telesync <args> --json` and returns the measurements with the command's JSON outcome.
 * Throws HarnessError when the command fails or its run did not succeed.
 */
export async function runTelesync(
  args: readonly string[],
  settings: TelesyncSettings,
  options: RunTelesyncOptions,
): Promise<TelesyncRun> {
  const scratch = createScratchDir('cwd');
  try {
    const invocation = telesyncInvocation([...args, '--json'], options.nodeArgs, options.root);
    const run = await runMonitored({
      label: options.label,
      command: invocation.command,
      args: invocation.args,
      env: telesyncEnv(settings),
      cwd: scratch.path,
      timeoutMs: options.timeoutMs,
      simulatorPid: settings.simulator.pid,
      ...(options.track ? { track: options.track } : {}),
      ...(options.onProgress ? { onStderrLine: options.onProgress } : {}),
      ...(options.backends ? { backends: options.backends } : {}),
    });
    requireSuccess(run);
    const json = lastJsonLine(run.stdout, options.label);
    if (json.status !== 'succeeded') {
      throw new HarnessError(
        `${options.label}: the run ended ${String(json.status)}: ${String(json.error)}`,
      );
    }
    return { ...run, json };
  } finally {
    scratch.remove();
  }
}

/** Every JSON line of a command's stdout, parsed. */
export function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function lastJsonLine(stdout: string, label: string): Record<string, unknown> {
  const lines = jsonLines(stdout);
  const last = lines[lines.length - 1];
  if (last === undefined) throw new HarnessError(`${label} printed no JSON outcome: ${stdout}`);
  return last;
}

/** A numeric field of a JSON outcome; throws when it is missing. */
export function numberField(json: Record<string, unknown>, key: string): number {
  const value = json[key];
  if (typeof value !== 'number') {
    throw new HarnessError(`the outcome has no number "${key}": ${JSON.stringify(json)}`);
  }
  return value;
}

export function stringField(json: Record<string, unknown>, key: string): string {
  const value = json[key];
  if (typeof value !== 'string') {
    throw new HarnessError(`the outcome has no text "${key}": ${JSON.stringify(json)}`);
  }
  return value;
}
