import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { HarnessError } from './bench-errors.js';
import {
  HAS_PROC,
  NamedProcessesCpu,
  readMachineCpu,
  readProcessCpuTicks,
  readProcessMemory,
  readProcessTree,
  readReapedChildrenCpuTicks,
  ticksToSeconds,
} from './proc-stats.js';
import type { RunBackendsCpu } from './run-backends.js';
import { round } from './stats.js';

/**
 * Runs a command as a child process and measures it: wall time, peak resident memory of the child
 * and its descendants (sampled from /proc every `sampleMs`, plus the kernel's own high-water mark of
 * the child), its CPU time, and what the rest of the machine (the simulator, PostgreSQL, anything
 * else) did with the CPU meanwhile. The machine has few cores, so where the CPU went is part of
 * every result.
 */

export interface MonitorOptions {
  /** For messages: "telesync backfill", "fetch limit"… */
  readonly label: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** The child is killed (whole process group) after this long, and the run fails. */
  readonly timeoutMs: number;
  /** Sampling interval of memory, default 50 ms. */
  readonly sampleMs?: number;
  /** The simulator's pid, whose CPU time is reported beside the child's. */
  readonly simulatorPid?: number;
  /** Told of every line the child writes to stderr (progress). */
  readonly onStderrLine?: (line: string) => void;
  /** Registers the running child so the harness can stop it on Ctrl-C. */
  readonly track?: (pid: number) => () => void;
  /** Measures the PostgreSQL backends serving the child, reported as ownPostgresSeconds. */
  readonly backends?: RunBackendsCpu;
}

export interface RssSample {
  /** Milliseconds since the child started. */
  readonly atMs: number;
  /** Resident memory of the child and its descendants, bytes. */
  readonly rssBytes: number;
}

/** Where the machine's CPU went while the child ran, in CPU seconds. */
export interface CpuBreakdown {
  readonly wallSeconds: number;
  /** Cores × wall time. */
  readonly capacitySeconds: number;
  /** Every core's time not idle, whoever used it. */
  readonly machineBusySeconds: number;
  /** The child (and the descendants it waited for). */
  readonly childSeconds: number;
  readonly simulatorSeconds: number | null;
  /** Every process named `postgres` (all backends, the WAL writer, the checkpointer…). */
  readonly postgresSeconds: number;
  /** The backends serving the child's own connections; null when not measured. */
  readonly ownPostgresSeconds: number | null;
  /** How many backends served the child; null when not measured. */
  readonly ownBackends: number | null;
  /** This harness process. */
  readonly harnessSeconds: number;
  /** Busy time not accounted for above: other users of the machine. */
  readonly otherSeconds: number;
}

export interface MonitoredRun {
  readonly label: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly wallMs: number;
  readonly stdout: string;
  /** The last 64 KiB of stderr. */
  readonly stderrTail: string;
  /** Highest sampled sum of VmRSS over the child and its descendants; null without /proc. */
  readonly peakTreeRssBytes: number | null;
  /** The child's own VmHWM at its last sample (the kernel's peak, not sampled); null without /proc. */
  readonly childHwmBytes: number | null;
  /** Samples, thinned to at most 200. */
  readonly rssSamples: readonly RssSample[];
  readonly cpu: CpuBreakdown | null;
}

const STDERR_TAIL_BYTES = 64 * 1024;
const POSTGRES_SAMPLE_EVERY = 5;

/** Runs the command to its end and returns the measurements; rejects only if it cannot start. */
export async function runMonitored(options: MonitorOptions): Promise<MonitoredRun> {
  const sampleMs = options.sampleMs ?? 50;
  const cores = availableParallelism();
  const machineBefore = readMachineCpu();
  const reapedBefore = readReapedChildrenCpuTicks();
  const simulatorBefore =
    options.simulatorPid === undefined ? undefined : readProcessCpuTicks(options.simulatorPid);
  const postgres = HAS_PROC ? new NamedProcessesCpu('postgres') : undefined;
  const harnessBefore = process.cpuUsage();

  const started = performance.now();
  const child = spawn(options.command, [...options.args], {
    cwd: options.cwd,
    env: { ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so a timeout can stop the child and whatever it started.
    detached: true,
  });
  const pid = child.pid;
  if (pid === undefined) {
    throw new HarnessError(`${options.label}: could not start ${options.command}`);
  }
  const untrack = options.track?.(pid) ?? (() => undefined);
  if (HAS_PROC) options.backends?.start(pid);

  let stdout = '';
  let stderr = '';
  let stderrLine = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_TAIL_BYTES);
    if (options.onStderrLine === undefined) return;
    stderrLine += chunk;
    const lines = stderrLine.split('\n');
    stderrLine = lines.pop() ?? '';
    for (const line of lines) if (line.trim() !== '') options.onStderrLine(line);
  });

  const samples: RssSample[] = [];
  let peakTree: number | null = null;
  let childHwm: number | null = null;
  let ticks = 0;
  const sample = (): void => {
    if (!HAS_PROC) return;
    let total = 0;
    let seen = false;
    for (const member of readProcessTree(pid)) {
      const memory = readProcessMemory(member);
      if (memory === undefined) continue;
      seen = true;
      total += memory.rssBytes;
      if (member === pid) childHwm = Math.max(childHwm ?? 0, memory.hwmBytes);
    }
    if (seen) {
      peakTree = Math.max(peakTree ?? 0, total);
      samples.push({ atMs: Math.round(performance.now() - started), rssBytes: total });
    }
    options.backends?.sample();
    if (++ticks % POSTGRES_SAMPLE_EVERY === 0) postgres?.sample();
  };
  sample();
  const timer = setInterval(sample, sampleMs);

  let timedOut = false;
  const killer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }, options.timeoutMs);

  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>(
    (resolve, reject) => {
      child.once('error', reject);
      child.once('close', (exitCode, exitSignal) => resolve([exitCode, exitSignal]));
    },
  ).finally(() => {
    clearInterval(timer);
    clearTimeout(killer);
    untrack();
  });
  const wallMs = performance.now() - started;
  postgres?.sample();
  const own = HAS_PROC ? await options.backends?.stop() : undefined;

  if (timedOut) {
    throw new HarnessError(
      `${options.label} did not finish within ${Math.round(options.timeoutMs / 1000)} s and was killed; ` +
        `last output: ${stderr.slice(-2000)}`,
    );
  }

  const machineAfter = readMachineCpu();
  const reapedAfter = readReapedChildrenCpuTicks();
  const simulatorAfter =
    options.simulatorPid === undefined ? undefined : readProcessCpuTicks(options.simulatorPid);
  const harness = process.cpuUsage(harnessBefore);
  let cpu: CpuBreakdown | null = null;
  if (
    machineBefore !== undefined &&
    machineAfter !== undefined &&
    reapedBefore !== undefined &&
    reapedAfter !== undefined &&
    postgres !== undefined
  ) {
    const seconds = (value: number): number => round(value, 2);
    const machineBusy = ticksToSeconds(machineAfter.busyTicks - machineBefore.busyTicks);
    const childCpu = ticksToSeconds(reapedAfter - reapedBefore);
    const simulatorCpu =
      simulatorBefore !== undefined && simulatorAfter !== undefined
        ? ticksToSeconds(simulatorAfter - simulatorBefore)
        : null;
    const postgresCpu = ticksToSeconds(postgres.ticks());
    const harnessCpu = (harness.user + harness.system) / 1e6;
    cpu = {
      wallSeconds: seconds(wallMs / 1000),
      capacitySeconds: seconds((cores * wallMs) / 1000),
      machineBusySeconds: seconds(machineBusy),
      childSeconds: seconds(childCpu),
      simulatorSeconds: simulatorCpu === null ? null : seconds(simulatorCpu),
      postgresSeconds: seconds(postgresCpu),
      ownPostgresSeconds:
        own === undefined || 'error' in own ? null : seconds(ticksToSeconds(own.ticks)),
      ownBackends: own === undefined || 'error' in own ? null : own.backends,
      harnessSeconds: seconds(harnessCpu),
      otherSeconds: seconds(
        Math.max(0, machineBusy - childCpu - (simulatorCpu ?? 0) - postgresCpu - harnessCpu),
      ),
    };
  }

  return {
    label: options.label,
    code,
    signal,
    wallMs,
    stdout,
    stderrTail: stderr,
    peakTreeRssBytes: peakTree,
    childHwmBytes: childHwm,
    rssSamples: thin(samples, 200),
    cpu,
  };
}

/** At most `count` samples, keeping each kept sample's neighbourhood peak. */
function thin(samples: readonly RssSample[], count: number): RssSample[] {
  if (samples.length <= count) return [...samples];
  const step = samples.length / count;
  const kept: RssSample[] = [];
  for (let k = 0; k < count; k++) {
    const slice = samples.slice(Math.floor(k * step), Math.floor((k + 1) * step));
    let best = slice[0]!;
    for (const candidate of slice) if (candidate.rssBytes > best.rssBytes) best = candidate;
    kept.push(best);
  }
  return kept;
}

/** The highest resident memory of a run: the sampled tree peak or the child's kernel peak. */
export function peakRssBytes(run: MonitoredRun): number | null {
  if (run.peakTreeRssBytes === null && run.childHwmBytes === null) return null;
  return Math.max(run.peakTreeRssBytes ?? 0, run.childHwmBytes ?? 0);
}

/** Peak resident memory in each quarter of the run's wall time (shows growth over a run). */
export function rssByQuarter(run: MonitoredRun): (number | null)[] {
  const quarters: (number | null)[] = [null, null, null, null];
  for (const { atMs, rssBytes } of run.rssSamples) {
    const index = Math.min(3, Math.floor((atMs / Math.max(1, run.wallMs)) * 4));
    quarters[index] = Math.max(quarters[index] ?? 0, rssBytes);
  }
  return quarters;
}

/** Fails the run (HarnessError with its stderr) unless the child exited 0. */
export function requireSuccess(run: MonitoredRun): void {
  if (run.code === 0) return;
  throw new HarnessError(
    `${run.label} exited with ${run.code === null ? `signal ${run.signal}` : `code ${run.code}`}: ` +
      `${run.stderrTail.slice(-3000)}${run.stdout.slice(-1000)}`,
  );
}

/**
 * A note naming the runs during which other work on the machine (not the child, the simulator,
 * PostgreSQL or the harness) used more than a tenth of the CPU capacity; undefined when none did.
 */
export function sharedMachineNote(
  label: string,
  cpus: readonly (CpuBreakdown | null)[],
): string | undefined {
  const noisy = cpus
    .map((cpu, index) => ({ cpu, run: index + 1 }))
    .filter(({ cpu }) => cpu !== null && cpu.otherSeconds > 0.1 * cpu.capacitySeconds);
  if (noisy.length === 0) return undefined;
  return `${label}: other work on the machine used ${noisy
    .map(
      ({ cpu, run }) =>
        `${Math.round((cpu!.otherSeconds / cpu!.capacitySeconds) * 100)}% of the CPU in run ${run}`,
    )
    .join(', ')} (see "other"); those figures are lower than on a quiet machine.`;
}
