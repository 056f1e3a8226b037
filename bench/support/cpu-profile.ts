import { readdirSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { REPO_ROOT } from './paths.js';

/**
 * Reads a V8 CPU profile (`node --cpu-prof`) and tells where the time went: the functions with the
 * most self time, and self time by area (a telesync folder, a package, node's internals, GC).
 */

interface CpuProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber?: number;
}

interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileEntry {
  readonly name: string;
  readonly selfMs: number;
  /** Share of the profile's sampled time (idle included). */
  readonly share: number;
}

export interface ProfileSummary {
  readonly file: string;
  /** Sampled time, milliseconds. */
  readonly totalMs: number;
  /** Sampled time not idle. */
  readonly busyMs: number;
  readonly topFunctions: readonly ProfileEntry[];
  readonly byArea: readonly ProfileEntry[];
}

/**
 * The profile in `dir` with the most busy (not idle) samples: the main thread, not tsx's loader
 * thread, which lives as long but mostly idles.
 */
export function findMainProfile(dir: string): string | undefined {
  let best: { path: string; busy: number } | undefined;
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.cpuprofile')) continue;
    const path = join(dir, name);
    const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
    const idle = new Set(
      profile.nodes
        .filter((node) => node.callFrame.functionName === '(idle)')
        .map((node) => node.id),
    );
    const busy = (profile.samples ?? []).filter((id) => !idle.has(id)).length;
    if (best === undefined || busy > best.busy) best = { path, busy };
  }
  return best?.path;
}

export function summarizeCpuProfile(path: string, top = 20): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, CpuProfileNode>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parentOf.set(child, node);
  /** The nearest caller written in JavaScript (native frames are charged to it). */
  const jsCaller = (node: CpuProfileNode): CpuProfileNode | undefined => {
    let current = parentOf.get(node.id);
    while (current !== undefined && current.callFrame.url === '')
      current = parentOf.get(current.id);
    return current;
  };
  const sources = new SourceLocator();
  const selfByFunction = new Map<string, number>();
  const selfByArea = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  let totalUs = 0;
  let idleUs = 0;
  for (let index = 0; index < samples.length; index++) {
    const node = byId.get(samples[index]!);
    // The time until the next sample belongs to this one.
    const us = Math.max(0, deltas[index + 1] ?? 0);
    if (node === undefined) continue;
    totalUs += us;
    const frame = sources.locate(node.callFrame);
    if (frame.functionName === '(idle)') idleUs += us;
    const caller =
      frame.url === '' && !SPECIAL.has(frame.functionName) ? jsCaller(node) : undefined;
    const callerFrame = caller === undefined ? undefined : sources.locate(caller.callFrame);
    const name =
      callerFrame === undefined
        ? describeFrame(frame)
        : `${describeFrame(frame)} ← ${describeFrame(callerFrame)}`;
    selfByFunction.set(name, (selfByFunction.get(name) ?? 0) + us);
    const area = callerFrame === undefined ? areaOf(frame) : `${areaOf(callerFrame)} (native)`;
    selfByArea.set(area, (selfByArea.get(area) ?? 0) + us);
  }
  const entries = (map: Map<string, number>): ProfileEntry[] =>
    [...map]
      .map(([name, us]) => ({
        name,
        selfMs: Math.round(us / 100) / 10,
        share: totalUs > 0 ? Math.round((us / totalUs) * 1000) / 1000 : 0,
      }))
      .sort((a, b) => b.selfMs - a.selfMs);
  return {
    file: path,
    totalMs: Math.round(totalUs / 1000),
    busyMs: Math.round((totalUs - idleUs) / 1000),
    topFunctions: entries(selfByFunction).slice(0, top),
    byArea: entries(selfByArea).slice(0, top),
  };
}

function displayPath(url: string): string {
  if (!url.startsWith('file://')) return url;
  let path: string;
  try {
    path = fileURLToPath(url);
  } catch {
    return url;
  }
  const modules = path.lastIndexOf('/node_modules/');
  return modules >= 0 ? path.slice(modules + 1) : relative(REPO_ROOT, path);
}

/** Pseudo-frames of V8, not functions. */
const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

function describeFrame(frame: CallFrame): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  if (frame.url === '') return name;
  // Line numbers of transpiled TypeScript are not the source's; past line 1 they still help.
  const line = frame.lineNumber > 0 ? `:${frame.lineNumber + 1}` : '';
  return `${name} ${displayPath(frame.url)}${line}`;
}

function areaOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') {
    if (functionName === '(garbage collector)') return 'garbage collector';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'V8/native (program)';
    return `native: ${functionName}`;
  }
  if (url.startsWith('node:')) return 'node internals';
  const path = displayPath(url);
  const modules = path.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const rest = path.slice(modules + 'node_modules/'.length).split('/');
    return `package ${rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  const src = /^src\/([^/]+)\//.exec(path);
  if (src !== null) return `telesync src/${src[1]}`;
  if (path.startsWith('migrations/')) return 'telesync migrations';
  return path;
}

/**
 * Frames of a bundled file (the command's entry is one: bin/build.js) told by the source they were
 * written in, through the file's source map (`<file>.map`), so that the summary names
 * src/api/received-json.ts, not a line of the bundle. Frames of other files are left as they are.
 */
class SourceLocator {
  readonly #maps = new Map<string, { map: SourceMap; dir: string } | null>();
  readonly #located = new Map<CallFrame, CallFrame>();

  locate(frame: CallFrame): CallFrame {
    let located = this.#located.get(frame);
    if (located === undefined) {
      located = this.#lookUp(frame);
      this.#located.set(frame, located);
    }
    return located;
  }

  #lookUp(frame: CallFrame): CallFrame {
    const bundle = frame.url.startsWith('file://') ? this.#mapOf(frame.url) : null;
    if (bundle === null) return frame;
    const entry = bundle.map.findEntry(frame.lineNumber, frame.columnNumber ?? 0);
    if (!('originalSource' in entry)) return frame;
    const source = entry.originalSource;
    const path = source.startsWith('file://')
      ? fileURLToPath(source)
      : isAbsolute(source)
        ? source
        : resolve(bundle.dir, source);
    return { ...frame, url: pathToFileURL(path).href, lineNumber: entry.originalLine };
  }

  #mapOf(url: string): { map: SourceMap; dir: string } | null {
    let bundle = this.#maps.get(url);
    if (bundle === undefined) {
      try {
        const mapPath = `${fileURLToPath(url)}.map`;
        const payload = JSON.parse(readFileSync(mapPath, 'utf8')) as ConstructorParameters<
          typeof SourceMap
        >[0];
        bundle = { map: new SourceMap(payload), dir: dirname(mapPath) };
      } catch {
        // No map beside the file (not a bundle), or one that cannot be read: frames stay as they are.
        bundle = null;
      }
      this.#maps.set(url, bundle);
    }
    return bundle;
  }
}
