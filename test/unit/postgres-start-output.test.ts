import { describe, expect, it } from 'vitest';
import { PostgresStartOutput, postgresStartFailure } from '../../src/db/postgres-start-output.js';

describe('postgresStartFailure', () => {
  it("gives PostgreSQL's FATAL message with the DETAIL after it", () => {
    expect(
      postgresStartFailure([
        'pglitec: shmctl: no such segment 1',
        '2026-11-29 12:48:23.101 UTC [42] FATAL:  database files are incompatible with server',
        '2026-11-29 12:48:23.101 UTC [42] DETAIL:  The data directory was initialized by PostgreSQL version 99, which is not compatible with this version 18.6.',
        '2026-11-29 12:48:23.101 UTC [42] HINT:  It looks like you need to initdb.',
      ]),
    ).toBe(
      'database files are incompatible with server (The data directory was initialized by PostgreSQL version 99, which is not compatible with this version 18.6)',
    );
  });

  it('gives a FATAL message without a detail as it is, and the last of several', () => {
    expect(
      postgresStartFailure([
        '2026-11-29 12:48:22.948 UTC [42] DETAIL:  a detail before any FATAL is not one of its',
        '2026-11-29 12:48:22.948 UTC [42] FATAL:  first',
        '2026-11-29 12:48:22.948 UTC [42] DETAIL:  of the first',
        '2026-11-29 12:48:22.948 UTC [42] PANIC:  could not locate a valid checkpoint record',
      ]),
    ).toBe('could not locate a valid checkpoint record');
  });

  it('is undefined when PostgreSQL said nothing fatal (a start that went well, or no output)', () => {
    expect(
      postgresStartFailure([
        '2026-11-29 12:48:23.510 UTC [42] LOG:  database system was not properly shut down; automatic recovery in progress',
        '2026-11-29 12:48:23.524 UTC [42] LOG:  redo is not required',
      ]),
    ).toBeUndefined();
    expect(postgresStartFailure([])).toBeUndefined();
  });
});

describe('PostgresStartOutput', () => {
  it('keeps only the last lines, each cut to a bounded length', () => {
    const output = new PostgresStartOutput();
    output.add(`2026-11-29 12:48:23.101 UTC [42] FATAL:  ${'x'.repeat(10_000)}`);
    for (let line = 0; line < 25; line++) output.add(`LOG:  line ${line}`);
    // The FATAL line has scrolled out of what is kept.
    expect(output.reason()).toBeUndefined();

    output.add(`2026-11-29 12:48:23.101 UTC [42] FATAL:  ${'y'.repeat(10_000)}`);
    const reason = output.reason()!;
    expect(reason.startsWith('yyy')).toBe(true);
    expect(reason.length).toBeLessThan(500);
  });
});
