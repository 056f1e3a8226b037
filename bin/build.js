#!/usr/bin/env node
// Compiles telesync into dist/ (the `prepare` script runs this on `npm ci` / `npm install`).
// Without the TypeScript compiler (an install with --omit=dev), it leaves things as they are:
// bin/telesync.js then runs the sources through tsx, which is a runtime dependency.
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  process.stderr.write(
    'telesync: no TypeScript compiler installed; the sources will run through tsx.\n',
  );
  process.exit(0);
}
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
