import { describe, expect, it } from 'vitest';
import { SimulatorStats } from '../../src/simulator/state/simulator-stats.js';
import { mapConcurrently } from '../../src/util/map-concurrently.js';

const SECOND = 1_000_000;

describe('the per-account load the simulator records', () => {
  it('keeps the most requests of an account in any 5 s, sliding, and per account', () => {
    const stats = new SimulatorStats();
    // 3 at t=0 s, 2 at t=4 s (5 within 5 s), 2 at t=6 s (the first 3 have left the window: 4).
    for (const at of [0, 0, 0, 4, 4, 6, 6]) {
      stats.requestArrived('A', at * SECOND);
      stats.requestEnded('A');
    }
    stats.requestArrived('B', 0);
    stats.requestEnded('B');
    const { accounts } = stats.snapshot();
    expect(accounts).toEqual({
      A: { requests: 7, maxPerWindow: 5, maxInFlight: 1, tightestSpanMs: null },
      B: { requests: 1, maxPerWindow: 1, maxInFlight: 1, tightestSpanMs: null },
    });
  });

  it('keeps the shortest time in which 301 requests of an account arrived', () => {
    const stats = new SimulatorStats();
    const MS = 1_000;
    // 301 requests 16.7 ms apart span 5,010 ms; a 302nd 10 ms later than the spacing makes the
    // last 301 span 5,003.3 ms (the first has left them).
    const times = Array.from({ length: 301 }, (_, index) => index * 16_700);
    times.push(300 * 16_700 + 10 * MS);
    for (const at of times.slice(0, 300)) stats.requestArrived('A', at);
    expect(stats.snapshot().accounts.A?.tightestSpanMs).toBeNull();
    stats.requestArrived('A', times[300]!);
    expect(stats.snapshot().accounts.A?.tightestSpanMs).toBeCloseTo(5_010, 6);
    stats.requestArrived('A', times[301]!);
    expect(stats.snapshot().accounts.A?.tightestSpanMs).toBeCloseTo(5_003.3, 6);
    // A later, wider span leaves the tightest as it was; the window held at most 300.
    stats.requestArrived('A', times[301]! + 60 * 1_000 * MS);
    expect(stats.snapshot().accounts.A).toMatchObject({ requests: 303, maxPerWindow: 300 });
    expect(stats.snapshot().accounts.A?.tightestSpanMs).toBeCloseTo(5_003.3, 6);
  });

  it('keeps the most requests of an account in flight at once', () => {
    const stats = new SimulatorStats();
    stats.requestArrived('A', 0);
    stats.requestArrived('A', 1);
    stats.requestArrived('A', 2);
    stats.requestEnded('A');
    stats.requestEnded('A');
    stats.requestArrived('A', 3);
    expect(stats.snapshot().accounts.A?.maxInFlight).toBe(3);
    stats.reset();
    expect(stats.snapshot().accounts).toEqual({});
  });
});

describe('mapConcurrently', () => {
  it('runs at most `limit` at once and returns results in the order of the items', async () => {
    let running = 0;
    let most = 0;
    const results = await mapConcurrently([30, 10, 20, 5, 1], 2, async (delayMs, index) => {
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      running--;
      return `${index}:${delayMs}`;
    });
    expect(results).toEqual(['0:30', '1:10', '2:20', '3:5', '4:1']);
    expect(most).toBe(2);
  });
});
