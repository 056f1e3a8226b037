import { existsSync } from 'node:fs';

/** libfaketime as Debian installs it (`apt-get install faketime`; CI installs it). */
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/** Whether a process can be started with a clock of its own here. */
export const canFakeClock = existsSync(LIBFAKETIME);

/**
 * The environment that starts a process with its clock `offset` off the machine's (libfaketime's
 * relative form: "-1d", "+2h"), its own only: the database server keeps the real one. For tests
 * of telesync on a machine whose clock is not the database's.
 */
export function fakedClockEnv(offset: string): Record<string, string> {
  return { LD_PRELOAD: LIBFAKETIME, FAKETIME: offset, FAKETIME_DONT_FAKE_MONOTONIC: '1' };
}

/**
 * The faked clock this process runs under, if any (`faketime … npx vitest`), for the processes it
 * starts: the suite can then be run as at a given moment (docs/contributing.md, "Tests").
 */
export function inheritedFakedClock(): Record<string, string> {
  const { FAKETIME, LD_PRELOAD } = process.env;
  return FAKETIME === undefined ? {} : { FAKETIME, LD_PRELOAD: LD_PRELOAD ?? '' };
}
