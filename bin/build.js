#!/usr/bin/env node
// Compiles telesync into dist/ (the `prepare` script runs this on `npm ci` / `npm install`).
// Without the TypeScript compiler (an install with --omit=dev), it leaves things as they are:
// bin/telesync.js then runs the sources through tsx, which is a runtime dependency.
//
// The compiler writes every module to dist/; the command's entry, dist/src/cli/entry.js, is then
// replaced by one file that holds telesync's modules and Kysely's (esbuild, which tsx depends on).
// Loading some 450 ES modules one by one took most of a command's start: 0.55 s of CPU before
// `telesync --version` printed, against 0.33 s for the bundle (docs/performance.md, "A bundled
// entry").
// The other packages stay in node_modules, loaded as they are: some find files next to their own
// (PGlite's WebAssembly, pino's workers), and a bundle would move them away from those.
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rejectRenamedClasses } from './renamed-classes.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc');
} catch {
  process.stderr.write(
    'telesync: no TypeScript compiler installed; the sources will run through tsx.\n',
  );
  process.exit(0);
}
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
if (result.status !== 0) process.exit(result.status ?? 1);

/** Packages bundled into the entry: pure ES modules that read no files of their own. */
const BUNDLED = new Set(['kysely']);

let esbuild;
try {
  esbuild = await import(require.resolve('esbuild'));
} catch {
  // The modules tsc wrote run as they are, only slower to start.
  process.exit(0);
}
const { dependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const external = Object.keys(dependencies)
  .filter((name) => !BUNDLED.has(name))
  .flatMap((name) => [name, `${name}/*`]);
const outfile = join(root, 'dist', 'src', 'cli', 'entry.js');
await esbuild.build({
  entryPoints: [join(root, 'src', 'cli', 'entry.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  external,
  sourcemap: 'linked',
  // No keepNames: it wraps every function the code makes at run time (closures too) in a
  // defineProperty call, which cost the fifty-account backfill 9% of the simulator's CPU and 5% of
  // telesync's (docs/performance.md, "No esbuild keepNames"). The names it would keep matter for
  // errors only, which are told by their class's name: checked below.
  keepNames: false,
  logLevel: 'warning',
  // Written last, so bin/telesync.js finds the entry no older than any source.
  allowOverwrite: true,
});

const rejected = rejectRenamedClasses(outfile);
if (rejected !== null) {
  process.stderr.write(`${rejected}\n`);
  process.exit(1);
}
