import { describe, expect, it } from 'vitest';
import {
  foldRepeatedSkips,
  formatAmount,
  formatCount,
  formatDuration,
  formatTime,
  splitErrorText,
} from '../../src/http/status-page-text.js';

describe('formatTime', () => {
  it('gives every instant to the second, in UTC, whatever precision or offset it came with', () => {
    expect(formatTime('2026-11-28T06:00:12.999999Z')).toBe('2026-11-28 06:00:12');
    expect(formatTime('2026-11-28T06:00:12Z')).toBe('2026-11-28 06:00:12');
    expect(formatTime('2026-11-28T08:00:12.5+02:00')).toBe('2026-11-28 06:00:12');
  });
  it('keeps a text that is no date', () => {
    expect(formatTime('soon')).toBe('soon');
  });
});

describe('formatCount and formatAmount', () => {
  it('separate thousands', () => {
    expect([0, 999, 1_000, 181_004, 12_345_678].map(formatCount)).toEqual([
      '0',
      '999',
      '1,000',
      '181,004',
      '12,345,678',
    ]);
  });
  it('keep every digit of an exact amount', () => {
    expect(formatAmount('12345.67890')).toBe('12,345.67890');
    expect(formatAmount('1234567890123456789.00001')).toBe('1,234,567,890,123,456,789.00001');
    expect(formatAmount('-1000')).toBe('-1,000');
    expect(formatAmount('0.5')).toBe('0.5');
    expect(formatAmount('n/a')).toBe('n/a');
  });
});

describe('formatDuration', () => {
  it('gives hours up to 48 hours, then days', () => {
    expect(formatDuration(47 * 3600 + 59 * 60)).toBe('47 h 59 min');
    expect(formatDuration(48 * 3600)).toBe('2 d 0 h');
    expect(formatDuration(4 * 86_400 + 3 * 3600 + 59)).toBe('4 d 3 h');
  });
});

describe('splitErrorText', () => {
  it('takes the request and the api_id out of the cause, and keeps the whole text as details', () => {
    const text =
      'GET /v1/Account/MA_X/TrunkCall/?end_time__gte=2026-11-27T00%3A00%3A00Z&limit=20&offset=0 failed after 3 attempts: 401 authentication failed: check TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN [api_id 5f0c]';
    expect(splitErrorText(text)).toEqual({
      cause: '401 authentication failed: check TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN',
      details: text,
    });
  });
  it('finds the request where the cause comes first too', () => {
    expect(
      splitErrorText('trunk_calls window 2026-11-27: GET https://api.example.com/v1/x failed: 503'),
    ).toEqual({
      cause: 'trunk_calls window 2026-11-27: 503',
      details: 'trunk_calls window 2026-11-27: GET https://api.example.com/v1/x failed: 503',
    });
  });
  it('keeps a short plain message whole, with nothing behind a click', () => {
    expect(splitErrorText('connect ECONNREFUSED 127.0.0.1:5432')).toEqual({
      cause: 'connect ECONNREFUSED 127.0.0.1:5432',
      details: undefined,
    });
  });
  it('cuts a long message at its first clause', () => {
    const text = `the database refused the batch; ${'x'.repeat(300)}`;
    expect(splitErrorText(text)).toEqual({
      cause: 'the database refused the batch',
      details: text,
    });
  });
});

describe('foldRepeatedSkips', () => {
  const run = (id: number, status: string, error: string | null) => ({ id, status, error });
  it('folds consecutive skips with one reason, and nothing else', () => {
    const runs = [
      run(6, 'skipped', 'locked'),
      run(5, 'skipped', 'locked'),
      run(4, 'skipped', 'locked'),
      run(3, 'skipped', 'other reason'),
      run(2, 'failed', 'boom'),
      run(1, 'failed', 'boom'),
    ];
    expect(
      foldRepeatedSkips(runs).map((fold) => [fold.newest.id, fold.oldest.id, fold.count]),
    ).toEqual([
      [6, 4, 3],
      [3, 3, 1],
      [2, 2, 1],
      [1, 1, 1],
    ]);
  });
});
