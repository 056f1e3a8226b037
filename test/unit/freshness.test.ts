import { describe, expect, it } from 'vitest';
import {
  runAgeSeconds,
  secondsSince,
  watermarkLagSeconds,
  wholeSeconds,
} from '../../src/domain/freshness.js';

const NOW = Date.parse('2025-06-01T12:00:00Z');

describe('secondsSince', () => {
  it('is now minus the timestamp, in seconds, microseconds kept', () => {
    expect(secondsSince('2025-06-01T11:55:00.000000Z', NOW)).toBe(300);
    expect(secondsSince('2025-06-01T10:00:00.500000Z', NOW)).toBe(7199.5);
    expect(secondsSince('2025-06-01T11:59:59.999999Z', NOW)).toBe(0.000001);
  });

  it('reads UTC offsets as the database returns them', () => {
    expect(secondsSince('2025-06-01T13:59:00.123456+02:00', NOW)).toBeCloseTo(59.876544, 9);
  });

  it('is 0, not negative, for a timestamp after now (a clock ahead of ours)', () => {
    expect(secondsSince('2025-06-01T12:00:03Z', NOW)).toBe(0);
  });
});

describe('watermarkLagSeconds and runAgeSeconds', () => {
  it('measure the same way', () => {
    const at = '2025-06-01T11:00:00.250000Z';
    expect(watermarkLagSeconds(at, NOW)).toBe(3599.75);
    expect(runAgeSeconds(at, NOW)).toBe(3599.75);
    expect(watermarkLagSeconds('2025-06-01T12:00:01Z', NOW)).toBe(0);
    expect(runAgeSeconds('2025-06-01T12:00:01Z', NOW)).toBe(0);
  });
});

describe('wholeSeconds', () => {
  it('rounds to the nearest second, halves up', () => {
    expect(wholeSeconds(7199.5)).toBe(7200);
    expect(wholeSeconds(59.49)).toBe(59);
    expect(wholeSeconds(0.000001)).toBe(0);
  });
});
