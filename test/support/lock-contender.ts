/**
 * A process that contends for an embedded directory's lock, for the lock's race test: on each line
 * `go` read from stdin it tries to take the lock of the directory given as its argument. Holding it,
 * it creates `holder` in that directory (`wx`: failing if another process holds it as well), keeps
 * it a moment, removes it and releases the lock. It answers each round with one line: `took`,
 * `busy` or `overlap` (the lock let two processes in).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { EmbeddedDatabaseBusyError, lockEmbeddedDirectory } from '../../src/db/embedded-lock.js';

const dataDir = process.argv[2]!;
const holderPath = join(dataDir, 'holder');

function round(): string {
  let lock;
  try {
    lock = lockEmbeddedDirectory(dataDir, 'lock contender');
  } catch (error) {
    if (error instanceof EmbeddedDatabaseBusyError) return 'busy';
    throw error;
  }
  try {
    writeFileSync(holderPath, String(process.pid), { flag: 'wx' });
  } catch {
    lock.release();
    return 'overlap';
  }
  const until = Date.now() + 2;
  while (Date.now() < until) {
    // Holds the lock briefly, so that the others of the round meet it held.
  }
  rmSync(holderPath);
  lock.release();
  return 'took';
}

for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'go') process.stdout.write(`${round()}\n`);
}
