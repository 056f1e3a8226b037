import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The rules of docs/architecture.md, checked on the source itself: which folder may import which,
 * no import cycles, SQL only in src/db. A new file that breaks one fails here with its name.
 */

const SRC = resolve(import.meta.dirname, '../../src');

/**
 * What each folder of src/ may import (besides itself). The flow runs api → normalize → load/db →
 * sync → jobs/scheduler/http → app → cli; config only assembles the settings types the components
 * declare. Files directly under src/ (version.ts) are leaves anyone may import.
 */
/** The composition root builds every component (commands add the app and the simulator). */
const APP_IMPORTS = [
  'domain',
  'util',
  'api',
  'normalize',
  'db',
  'load',
  'sync',
  'jobs',
  'scheduler',
  'http',
  'config',
] as const;

const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  domain: ['util'],
  util: ['domain'],
  api: ['domain', 'util'],
  normalize: ['domain', 'util', 'api'],
  db: ['domain', 'util'],
  load: ['domain', 'util', 'db', 'normalize'],
  sync: ['domain', 'util', 'api', 'normalize', 'db', 'load'],
  jobs: ['domain', 'util', 'api', 'db', 'sync'],
  scheduler: ['domain', 'util', 'api', 'db', 'sync', 'jobs'],
  http: ['domain', 'util', 'api', 'db', 'sync', 'scheduler', 'jobs'],
  config: ['domain', 'util', 'api', 'db', 'sync', 'scheduler', 'http', 'jobs'],
  app: APP_IMPORTS,
  simulator: ['domain', 'util', 'api'],
  cli: [...APP_IMPORTS, 'app', 'simulator'],
};

/**
 * Imports allowed for types only (`import type`): a normaliser bridges the wire type (api/) and the
 * row type (db/schema.ts), and runs neither the client nor a query.
 */
const ALLOWED_TYPES_ONLY: Readonly<Record<string, readonly string[]>> = {
  normalize: ['db'],
};

/** Where SQL may be written: repositories and drivers, and the simulator (it is the service). */
const SQL_FOLDERS = new Set(['db', 'simulator']);
const SQL_PATTERN =
  /\bsql`|sql\.raw\(|\.selectFrom\(|\.insertInto\(|\.updateTable\(|\.deleteFrom\(/;

interface SourceFile {
  /** Path below src/, with forward slashes. */
  readonly path: string;
  readonly folder: string;
  readonly text: string;
  /** Paths below src/ of the files it imports (relative imports only; outside src/ starts with ..). */
  readonly imports: readonly string[];
  /** Those of `imports` that import types only. */
  readonly typeImports: ReadonlySet<string>;
}

function listSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listSources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT_PATTERN = /(?:^|\n)\s*(?:import|export)\s([^'"`;]*?)from\s+'(\.[^']+)'/g;

function readSources(): SourceFile[] {
  return listSources(SRC).map((file) => {
    const path = relative(SRC, file).split('\\').join('/');
    const text = readFileSync(file, 'utf8');
    const found = [...text.matchAll(IMPORT_PATTERN)].map((match) => ({
      target: relative(SRC, resolve(dirname(file), match[2]!.replace(/\.js$/, '.ts')))
        .split('\\')
        .join('/'),
      typeOnly: /^type\s/.test(match[1]!),
    }));
    const imports = found.map((entry) => entry.target);
    const typeImports = new Set(
      imports.filter((target) => found.every((entry) => entry.target !== target || entry.typeOnly)),
    );
    return { path, folder: folderOf(path), text, imports, typeImports };
  });
}

function folderOf(path: string): string {
  if (path.startsWith('../')) return '..';
  const slash = path.indexOf('/');
  return slash === -1 ? '' : path.slice(0, slash);
}

/** Every cycle's files (strongly connected components of more than one file, or a self-import). */
export function findCycles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const lowLinks = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    indices.set(node, index);
    lowLinks.set(node, index);
    index++;
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!indices.has(next)) {
        visit(next);
        lowLinks.set(node, Math.min(lowLinks.get(node)!, lowLinks.get(next)!));
      } else if (onStack.has(next)) {
        lowLinks.set(node, Math.min(lowLinks.get(node)!, indices.get(next)!));
      }
    }
    if (lowLinks.get(node) === indices.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (edges.get(node) ?? []).includes(node))
        cycles.push(component.sort());
    }
  };
  for (const node of edges.keys()) if (!indices.has(node)) visit(node);
  return cycles;
}

describe('the architecture of src/', () => {
  const sources = readSources();

  it('reads the whole tree', () => {
    expect(sources.length).toBeGreaterThan(50);
    expect(sources.filter((source) => source.imports.length > 0).length).toBeGreaterThan(40);
  });

  it('every folder is one the rules know', () => {
    const unknown = [...new Set(sources.map((source) => source.folder))].filter(
      (folder) => folder !== '' && !(folder in ALLOWED),
    );
    expect(unknown).toEqual([]);
  });

  it('dependencies point one way along the flow', () => {
    const violations = sources.flatMap((source) =>
      source.imports
        .filter((target) => {
          const folder = folderOf(target);
          if (folder === '' || folder === '..' || folder === source.folder) return false;
          if ((ALLOWED[source.folder] ?? []).includes(folder)) return false;
          return !(
            source.typeImports.has(target) &&
            (ALLOWED_TYPES_ONLY[source.folder] ?? []).includes(folder)
          );
        })
        .map((target) => `${source.path} imports ${target}`),
    );
    expect(violations).toEqual([]);
  });

  it('has no import cycles', () => {
    const edges = new Map(sources.map((source) => [source.path, source.imports] as const));
    expect(findCycles(edges)).toEqual([]);
  });

  it('writes SQL only in src/db', () => {
    const outside = sources
      .filter((source) => !SQL_FOLDERS.has(source.folder) && SQL_PATTERN.test(source.text))
      .map((source) => source.path);
    expect(outside).toEqual([]);
  });
});

describe('findCycles', () => {
  it('finds a cycle of three files and a self-import, and nothing in a chain', () => {
    const edges = new Map<string, string[]>([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
      ['e.ts', ['e.ts']],
      ['f.ts', ['d.ts']],
    ]);
    expect(findCycles(edges)).toEqual([['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
  });
});
