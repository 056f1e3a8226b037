import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { checkCronExpression } from '../../src/scheduler/cron-expression.js';

describe('checkCronExpression', () => {
  it.each([
    '* * * * *',
    '*/5 * * * *',
    '0 3 * * *',
    '15,45 8-18/2 * * mon-fri',
    '0 0 1 jan *',
    '0 0 * * 7',
    '*/59 * * * *',
    // Fires once every four years: rare, but valid.
    '0 0 29 2 *',
  ])('accepts %s', (expression) => {
    expect(checkCronExpression(expression)).toBeUndefined();
  });

  it('refuses a six-field expression (node-cron would take the first field as seconds)', () => {
    expect(checkCronExpression('0 */5 * * * *')).toBe(
      'it has six fields, but telesync takes five, without seconds: drop the first (seconds) field',
    );
  });

  it.each([
    ['*/61 * * * *', 'minute step "/61" is out of range: use 1 to 59'],
    ['0 */24 * * *', 'hour step "/24" is out of range: use 1 to 23'],
    ['*/0 * * * *', 'minute step "/0" is out of range: use 1 to 59'],
    ['61 * * * *', 'minute "61" is out of range: use 0 to 59'],
    ['0 0 0 * *', 'day of month "0" is out of range: use 1 to 31'],
    ['0 0 * 13 *', 'month "13" is out of range: use 1 to 12 or a name (jan…)'],
    ['0 18-8 * * *', 'hour range "18-8" runs backwards'],
    ['0 0 * *', 'it has 4 field(s), but telesync takes five'],
  ])('refuses %s: %s', (expression, problem) => {
    expect(checkCronExpression(expression)).toBe(problem);
  });
});

describe('the seconds field, for tests only', () => {
  it('is taken with allowSeconds, and checked', () => {
    expect(checkCronExpression('45,46 * * * * *', { allowSeconds: true })).toBeUndefined();
    expect(checkCronExpression('61 * * * * *', { allowSeconds: true })).toBe(
      'second "61" is out of range: use 0 to 59',
    );
    expect(checkCronExpression('* * * * *', { allowSeconds: true })).toBeUndefined();
  });
});

describe('the schedule variables', () => {
  it('refuse a six-field cron with the fix, and an out-of-range step', () => {
    expect(() => loadConfig({ TELESYNC_SCHEDULE_TRUNK_CALLS: '0 */5 * * * *' })).toThrow(
      /TELESYNC_SCHEDULE_TRUNK_CALLS: "0 \*\/5 \* \* \* \*" is not a cron expression .*drop the first \(seconds\) field/,
    );
    expect(() => loadConfig({ TELESYNC_SCHEDULE_ENDPOINTS: '*/61 * * * *' })).toThrow(
      /step "\/61" is out of range/,
    );
  });

  it('accept a valid cron that rarely fires', () => {
    const config = loadConfig({ TELESYNC_SCHEDULE_CALLER_IDS: '0 0 29 2 *' });
    expect(config.schedule.crons.caller_ids).toBe('0 0 29 2 *');
  });
});
