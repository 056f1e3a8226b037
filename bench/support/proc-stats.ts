import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

/**
 * Readers of Linux's /proc: memory and CPU time of processes, and of the whole machine. Every
 * reader returns undefined (never throws) when the process is gone or /proc is not there, so a
 * measurement degrades to "not measured" instead of breaking the run.
 */

export const HAS_PROC = existsSync('/proc/self/status');

/** Clock ticks per second of the CPU times in /proc (sysconf(_SC_CLK_TCK); 100 on Linux). */
export const CLOCK_TICKS_PER_SECOND = readClockTicks();

function readClockTicks(): number {
  try {
    const value = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(value) && value > 0 ? value : 100;
  } catch {
    return 100;
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

export interface ProcessMemory {
  /** Resident set size now (VmRSS), bytes. */
  readonly rssBytes: number;
  /** The kernel's high-water mark of the resident set (VmHWM), bytes. */
  readonly hwmBytes: number;
}

/** VmRSS and VmHWM of `pid`. */
export function readProcessMemory(pid: number): ProcessMemory | undefined {
  const status = readText(`/proc/${pid}/status`);
  if (status === undefined) return undefined;
  const field = (name: string): number | undefined => {
    const match = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(status);
    return match === null ? undefined : Number(match[1]) * 1024;
  };
  const rss = field('VmRSS');
  const hwm = field('VmHWM');
  // A zombie has no VmRSS line: it holds no memory any more.
  if (rss === undefined || hwm === undefined) return undefined;
  return { rssBytes: rss, hwmBytes: hwm };
}

/** Direct children of `pid` (every thread's children). */
export function readChildren(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const children: number[] = [];
  for (const task of tasks) {
    const text = readText(`/proc/${pid}/task/${task}/children`);
    if (text === undefined) continue;
    for (const part of text.trim().split(/\s+/)) if (part !== '') children.push(Number(part));
  }
  return children;
}

/** `pid` and all its descendants. */
export function readProcessTree(pid: number): number[] {
  const tree: number[] = [];
  const pending = [pid];
  while (pending.length > 0) {
    const next = pending.pop()!;
    tree.push(next);
    pending.push(...readChildren(next));
  }
  return tree;
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(path: string): string[] | undefined {
  const text = readText(path);
  if (text === undefined) return undefined;
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  // Field 3 (state) is the first after the name; fields are numbered from 1 in proc(5).
  return text
    .slice(close + 2)
    .trim()
    .split(' ');
}

/** User + system CPU time of `pid` itself, in clock ticks. */
export function readProcessCpuTicks(pid: number): number | undefined {
  const fields = statFields(`/proc/${pid}/stat`);
  if (fields === undefined) return undefined;
  // utime is field 14 and stime field 15; fields[0] is field 3.
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * CPU time of this process's children that have ended and been waited for (cutime + cstime), in
 * clock ticks. Its growth across one child's life is that child's CPU time, exactly.
 */
export function readReapedChildrenCpuTicks(): number | undefined {
  const fields = statFields('/proc/self/stat');
  if (fields === undefined) return undefined;
  // cutime is field 16 and cstime field 17.
  return Number(fields[13]) + Number(fields[14]);
}

export interface MachineCpu {
  /** Ticks spent doing anything but idling or waiting for I/O, all cores. */
  readonly busyTicks: number;
  readonly totalTicks: number;
}

export function readMachineCpu(): MachineCpu | undefined {
  const text = readText('/proc/stat');
  if (text === undefined) return undefined;
  const line = text.split('\n', 1)[0] ?? '';
  const values = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = values.reduce((sum, value) => sum + value, 0);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { busyTicks: total - idle, totalTicks: total };
}

/** Process ids whose command name (comm) is `name`. */
export function findProcessesByName(name: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    if (readText(`/proc/${entry}/comm`)?.trim() === name) found.push(Number(entry));
  }
  return found;
}

/**
 * CPU time of every process of one name (e.g. all PostgreSQL backends) over a period, including
 * processes that start during it. A process that ends loses at most its last sampling interval.
 */
export class NamedProcessesCpu {
  readonly #baseline = new Map<number, number>();
  readonly #latest = new Map<number, number>();

  constructor(readonly name: string) {
    for (const pid of findProcessesByName(name)) {
      const ticks = readProcessCpuTicks(pid);
      if (ticks !== undefined) {
        this.#baseline.set(pid, ticks);
        this.#latest.set(pid, ticks);
      }
    }
  }

  sample(): void {
    for (const pid of findProcessesByName(this.name)) {
      const ticks = readProcessCpuTicks(pid);
      if (ticks === undefined) continue;
      if (!this.#baseline.has(pid)) this.#baseline.set(pid, 0);
      this.#latest.set(pid, ticks);
    }
  }

  /** CPU ticks used since construction. */
  ticks(): number {
    let total = 0;
    for (const [pid, latest] of this.#latest) total += latest - (this.#baseline.get(pid) ?? 0);
    return total;
  }
}

export function ticksToSeconds(ticks: number): number {
  return ticks / CLOCK_TICKS_PER_SECOND;
}
