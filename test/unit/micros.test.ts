import { describe, expect, it } from 'vitest';
import {
  formatFilterMicros,
  formatIsoMicros,
  formatServiceTime,
  parseDateTimeParts,
  parseEpochMicros,
} from '../../src/util/micros.js';

describe('parseEpochMicros', () => {
  it('reads every offset to the same instant, microseconds kept', () => {
    const forms = [
      '2022-03-29 11:10:29.456727+05:30',
      '2022-03-29T05:40:29.456727Z',
      '2022-03-29 01:40:29.456727-04:00',
      '2022-03-29 11:25:29.456727+05:45',
      '2022-03-29 19:40:29.456727+14:00',
      '2022-03-28 17:40:29.456727-12:00',
      '2022-03-29 05:40:29.456727+0000',
      '2022-03-29 05:40:29.456727+00',
    ];
    const instants = forms.map(parseEpochMicros);
    expect(new Set(instants).size).toBe(1);
    expect(instants[0]).toBe(Date.UTC(2022, 2, 29, 5, 40, 29) * 1000 + 456727);
  });
  it('pads short fractions and reads text without an offset as UTC', () => {
    expect(parseEpochMicros('2022-03-29 05:40:29.4')).toBe(
      Date.UTC(2022, 2, 29, 5, 40, 29) * 1000 + 400000,
    );
    expect(parseEpochMicros('2022-03-29 05:40')).toBe(Date.UTC(2022, 2, 29, 5, 40) * 1000);
  });
  it.each([
    '2023-02-29 00:00:00Z',
    '2022-13-01 00:00:00Z',
    '2022-03-29 24:00:00Z',
    '2022-03-29 23:60:00Z',
    '2022-03-29 05:40:29.1234567Z',
    '2022-03-29 05:40:29+25:00',
    '2022/03/29 05:40:29',
    '',
    'yesterday',
  ])('refuses %j', (text) => {
    expect(parseEpochMicros(text)).toBeUndefined();
  });
  it('reads the form telesync writes (ISO 8601 in UTC) by its layout, to the same instants', () => {
    const base = Date.UTC(2026, 7, 31, 23, 59, 16) * 1000;
    expect(parseEpochMicros('2026-08-31T23:59:16Z')).toBe(base);
    expect(parseEpochMicros('2026-08-31T23:59:16.5Z')).toBe(base + 500_000);
    expect(parseEpochMicros('2026-08-31T23:59:16.000001Z')).toBe(base + 1);
    expect(parseEpochMicros('2024-02-29T00:00:00.123Z')).toBe(
      Date.UTC(2024, 1, 29) * 1000 + 123_000,
    );
    for (const text of [
      '2023-02-29T00:00:00Z',
      '2022-03-29T24:00:00Z',
      '2022-03-29T05:40:60Z',
      '2022-03-29T05:40:29.Z',
      '2022-03-29T05:40:29.1234567Z',
      '2022-03-29T05:4x:29Z',
    ]) {
      expect(parseEpochMicros(text), text).toBeUndefined();
    }
  });
  it('keeps years below 100 as they are', () => {
    expect(parseDateTimeParts('0044-03-15 12:00:00Z')?.year).toBe(44);
    expect(formatIsoMicros(parseEpochMicros('0044-03-15T12:00:00Z')!)).toBe('0044-03-15T12:00:00Z');
  });
});

describe('formatting', () => {
  const t = parseEpochMicros('2022-03-29T05:40:29.000027Z')!;
  it('writes ISO UTC with the fraction only when there is one', () => {
    expect(formatIsoMicros(t)).toBe('2022-03-29T05:40:29.000027Z');
    expect(formatIsoMicros(t - 27)).toBe('2022-03-29T05:40:29Z');
    expect(formatIsoMicros(-1)).toBe('1969-12-31T23:59:59.999999Z');
    // The date text of the last day is kept: instants of other days in between must not see it.
    const day = 86_400_000_000;
    for (const instant of [t, t + day, t, t - day, t + 1, t + 2 * day + 123_456]) {
      expect(formatIsoMicros(instant)).toBe(
        new Date(Math.floor(instant / 1000)).toISOString().slice(0, 19) +
          (instant % 1_000_000 === 0 ? '' : `.${String(instant % 1_000_000).padStart(6, '0')}`) +
          'Z',
      );
    }
  });
  it('writes the trunk list filter form in UTC', () => {
    expect(formatFilterMicros(t)).toBe('2022-03-29 05:40:29.000027');
    expect(formatFilterMicros(t - 27)).toBe('2022-03-29 05:40:29');
  });
  it('writes the service form at any offset, round-tripping', () => {
    for (const offset of [0, 330, 345, -240, 840, -720]) {
      const text = formatServiceTime(t, offset, true);
      expect(parseEpochMicros(text)).toBe(t);
    }
    expect(formatServiceTime(t, 330, true)).toBe('2022-03-29 11:10:29.000027+05:30');
    expect(formatServiceTime(t - 27, -240, false)).toBe('2022-03-29 01:40:29-04:00');
  });
});
