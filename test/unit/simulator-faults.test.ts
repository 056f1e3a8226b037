import { describe, expect, it } from 'vitest';
import {
  decideRequestFault,
  NO_FAULTS,
  parseFaultConfig,
  type FaultConfig,
} from '../../src/simulator/faults.js';
import { Rng } from '../../src/simulator/data/prng.js';
import { parseRateLimit, SlidingWindowLimiter } from '../../src/simulator/rate-limiter.js';

function config(patch: Partial<FaultConfig>): FaultConfig {
  const parsed = parseFaultConfig(patch);
  if (!parsed.ok) throw new Error(parsed.problems.join('; '));
  return parsed.config;
}

describe('fault configuration', () => {
  it('takes the keys given over the base and reports every bad one', () => {
    expect(config({ serverErrors: 0.25 })).toEqual({ ...NO_FAULTS, serverErrors: 0.25 });
    const bad = parseFaultConfig({ serverErrors: 2, latencyMs: -1, down: 'yes', teleport: 1 });
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.problems).toHaveLength(4);
      expect(bad.problems.join('\n')).toMatch(/serverErrors must be a share from 0 to 1/);
      expect(bad.problems.join('\n')).toMatch(/unknown fault teleport/);
    }
    expect(parseFaultConfig({ tooManyRequests: 0.6, resets: 0.6 }).ok).toBe(false);
    expect(parseFaultConfig([]).ok).toBe(false);
  });
});

describe('request fault decisions', () => {
  const tally = (faults: FaultConfig, draws = 20_000): Record<string, number> => {
    const rng = new Rng(2024);
    const counts: Record<string, number> = {};
    for (let k = 0; k < draws; k++) {
      const { fault } = decideRequestFault(faults, rng);
      const key = fault.kind === 'server-error' ? String(fault.status) : fault.kind;
      counts[key] = (counts[key] ?? 0) + 1;
    }
    return counts;
  };

  it('injects each kind in about its share, and nothing when no fault is set', () => {
    expect(tally(NO_FAULTS)).toEqual({ none: 20_000 });
    const counts = tally(
      config({ tooManyRequests: 0.1, serverErrors: 0.15, resets: 0.05, truncations: 0.05 }),
    );
    const share = (key: string): number => (counts[key] ?? 0) / 20_000;
    expect(share('too-many-requests')).toBeCloseTo(0.1, 1);
    expect(share('500') + share('502') + share('503')).toBeCloseTo(0.15, 1);
    expect(share('500')).toBeGreaterThan(0.03);
    expect(share('502')).toBeGreaterThan(0.03);
    expect(share('503')).toBeGreaterThan(0.03);
    expect(share('reset')).toBeCloseTo(0.05, 1);
    expect(share('truncate')).toBeCloseTo(0.05, 1);
  });

  it('answers everything 503 when down, and carries the configured Retry-After', () => {
    expect(tally(config({ down: true, tooManyRequests: 0.5 }), 500)).toEqual({ down: 500 });
    const decision = decideRequestFault(
      config({ tooManyRequests: 1, retryAfterSeconds: 7 }),
      new Rng(1),
    );
    expect(decision.fault).toEqual({ kind: 'too-many-requests', retryAfterSeconds: 7 });
  });

  it('adds latency, jitter and spikes within their bounds', () => {
    const rng = new Rng(5);
    const faults = config({ latencyMs: 20, latencyJitterMs: 10, spikes: 0.2, spikeMs: 1_000 });
    let spikes = 0;
    for (let k = 0; k < 2_000; k++) {
      const decision = decideRequestFault(faults, rng);
      const base = decision.delayMs - (decision.spiked ? 1_000 : 0);
      expect(base).toBeGreaterThanOrEqual(20);
      expect(base).toBeLessThanOrEqual(30);
      if (decision.spiked) spikes++;
    }
    expect(spikes / 2_000).toBeCloseTo(0.2, 1);
  });

  it('truncates to a part strictly inside the body', () => {
    const rng = new Rng(9);
    for (let k = 0; k < 500; k++) {
      const { fault } = decideRequestFault(config({ truncations: 1 }), rng);
      if (fault.kind !== 'truncate') throw new Error('expected a truncation');
      expect(fault.fraction).toBeGreaterThan(0);
      expect(fault.fraction).toBeLessThan(1);
    }
  });
});

describe('rate limit', () => {
  it('parses the accepted forms and refuses the rest', () => {
    expect(parseRateLimit('300/5s')).toEqual({ requests: 300, windowMs: 5_000 });
    expect(parseRateLimit('50/s')).toEqual({ requests: 50, windowMs: 1_000 });
    expect(parseRateLimit('1000/1m')).toEqual({ requests: 1_000, windowMs: 60_000 });
    expect(parseRateLimit('10/500ms')).toEqual({ requests: 10, windowMs: 500 });
    for (const bad of ['300', '0/5s', '300/0s', 'fast', '300/5h', '-1/s']) {
      expect(parseRateLimit(bad)).toBeUndefined();
    }
  });

  it('allows the budget in any sliding window and says when to retry, in whole seconds', () => {
    const limiter = new SlidingWindowLimiter({ requests: 3, windowMs: 5_000 });
    const t0 = 1_000_000_000;
    expect(limiter.take('A', t0).allowed).toBe(true);
    expect(limiter.take('A', t0 + 1_000_000).allowed).toBe(true);
    expect(limiter.take('A', t0 + 2_000_000).allowed).toBe(true);
    // Another account has its own budget.
    expect(limiter.take('B', t0 + 2_000_000).allowed).toBe(true);
    expect(limiter.take('A', t0 + 2_500_000)).toEqual({ allowed: false, retryAfterSeconds: 3 });
    // Refused requests do not use the budget: at t0 + 5 s the first request leaves the window.
    expect(limiter.take('A', t0 + 4_999_999)).toEqual({ allowed: false, retryAfterSeconds: 1 });
    expect(limiter.take('A', t0 + 5_000_000).allowed).toBe(true);
    expect(limiter.take('A', t0 + 5_000_001).allowed).toBe(false);
  });

  it('counts requests by arrival when one is handled after a later one', () => {
    const limiter = new SlidingWindowLimiter({ requests: 2, windowMs: 5_000 });
    const t0 = 1_000_000_000;
    expect(limiter.take('A', t0 + 2_000_000).allowed).toBe(true);
    // Arrived first, handled second.
    expect(limiter.take('A', t0).allowed).toBe(true);
    expect(limiter.take('A', t0 + 4_000_000)).toEqual({ allowed: false, retryAfterSeconds: 1 });
    // The earlier arrival leaves the window first, at t0 + 5 s, not t0 + 7 s.
    expect(limiter.take('A', t0 + 5_000_000).allowed).toBe(true);
    expect(limiter.take('A', t0 + 6_999_999).allowed).toBe(false);
  });
});
