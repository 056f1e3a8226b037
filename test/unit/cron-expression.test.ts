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

  it.each(['0 */5 * * * *', '45,46 * * * * *', '*/10 0 3 * * mon-fri'])(
    'accepts six fields, seconds first: %s',
    (expression) => {
      expect(checkCronExpression(expression)).toBeUndefined();
    },
  );

  it.each([
    ['*/61 * * * *', 'minute step "/61" is out of range: use 1 to 59'],
    ['0 */24 * * *', 'hour step "/24" is out of range: use 1 to 23'],
    ['*/0 * * * *', 'minute step "/0" is out of range: use 1 to 59'],
    ['61 * * * *', 'minute "61" is out of range: use 0 to 59'],
    ['0 0 0 * *', 'day of month "0" is out of range: use 1 to 31'],
    ['0 0 * 13 *', 'month "13" is out of range: use 1 to 12 or a name (jan…)'],
    ['0 18-8 * * *', 'hour range "18-8" runs backwards'],
    ['0 0 * *', 'it has 4 field(s), but a cron expression has five (or six, seconds first)'],
    ['0 0 0 * * * *', 'it has 7 field(s), but a cron expression has five (or six, seconds first)'],
    ['61 * * * * *', 'second "61" is out of range: use 0 to 59'],
    ['0 */61 * * * *', 'minute step "/61" is out of range: use 1 to 59'],
  ])('refuses %s: %s', (expression, problem) => {
    expect(checkCronExpression(expression)).toBe(problem);
  });
});

describe('the schedule variables', () => {
  it('take a six-field cron (seconds first) and refuse an out-of-range step with the fix', () => {
    expect(
      loadConfig({ TELESYNC_SCHEDULE_TRUNK_CALLS: '30 */5 * * * *' }).schedule.crons.trunk_calls,
    ).toBe('30 */5 * * * *');
    expect(() => loadConfig({ TELESYNC_SCHEDULE_ENDPOINTS: '*/61 * * * *' })).toThrow(
      /step "\/61" is out of range/,
    );
  });

  it('accept a valid cron that rarely fires', () => {
    const config = loadConfig({ TELESYNC_SCHEDULE_CALLER_IDS: '0 0 29 2 *' });
    expect(config.schedule.crons.caller_ids).toBe('0 0 29 2 *');
  });
});
