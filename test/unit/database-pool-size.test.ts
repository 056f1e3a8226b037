import { describe, expect, it } from 'vitest';
import { databasePoolSize } from '../../src/app/app-services.js';

describe("a process's database pool", () => {
  it('has a connection for every account in hand, its locks and its loading transactions', () => {
    expect(databasePoolSize(1, 2)).toBe(10);
    expect(databasePoolSize(10, 2)).toBe(15);
  });

  it('stays at 20 however many accounts: a scheduler, two workers and a command fit in 100', () => {
    expect(databasePoolSize(50, 2)).toBe(20);
    expect(databasePoolSize(57, 4)).toBe(20);
    // Scheduler, two workers (each with pg-boss's 4) and a command.
    expect(20 + 2 * (databasePoolSize(64, 2) + 4) + databasePoolSize(64, 2)).toBeLessThanOrEqual(
      97,
    );
  });

  it('grows past 20 only for the loading connections asked for, with one for the locks and reads', () => {
    expect(databasePoolSize(50, 32)).toBe(36);
  });
});
