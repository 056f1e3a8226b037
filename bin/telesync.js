#!/usr/bin/env node
// Entry point of the `telesync` command.
//
// `npm ci` compiles the sources into dist/ (the prepare script, bin/build.js): compiled code starts
// in half the time and memory. When there is no build, or a source file is newer than the build
// (someone edited the code), the TypeScript sources run through tsx instead, so a stale build never
// runs and there is no build step to remember.
import { existsSync, readdirSync, statSync } from 'node:fs';
import module from 'node:module';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'dist', 'src', 'cli', 'entry.js');

/** The latest modification time of the TypeScript sources under `dir`. */
function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

function buildIsFresh() {
  if (process.env.TELESYNC_RUN_SOURCES === '1' || !existsSync(built)) return false;
  const builtAt = statSync(built).mtimeMs;
  return ['src', 'migrations'].every((dir) => newestSource(join(root, dir)) <= builtAt);
}

if (buildIsFresh()) {
  // V8's compiled code kept on disk (node's own cache, keyed by file content): each start after the
  // first skips compiling the 1.2 MB bundle and its dependencies, about a quarter of start-up's CPU.
  module.enableCompileCache?.();
  await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/entry.ts');
}
