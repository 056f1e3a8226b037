import { describe, expect, it } from 'vitest';
import { longestTickGapMinutes, planSchedule } from '../../src/scheduler/schedule-plan.js';
import { loadConfig } from '../../src/config/load-config.js';

describe('planSchedule', () => {
  it('schedules every stream with a cron and leaves the "off" ones out, in stream order', () => {
    const config = loadConfig({
      TELESYNC_SCHEDULE_TRUNK_CALLS: '*/5 * * * *',
      TELESYNC_SCHEDULE_ENDPOINTS: 'off',
      TELESYNC_SCHEDULE_MESSAGES: 'off',
      TELESYNC_SCHEDULE_CALL_STREAMS: '30 2 * * *',
    });
    const plan = planSchedule(config.schedule.crons);
    expect({ scheduled: plan.scheduled, off: plan.off }).toEqual({
      scheduled: [
        { stream: 'trunk_calls', cron: '*/5 * * * *' },
        { stream: 'caller_ids', cron: '0 * * * *' },
        { stream: 'powerpacks', cron: '*/5 * * * *' },
        { stream: 'call_streams', cron: '30 2 * * *' },
      ],
      off: ['endpoints', 'messages'],
    });
    // The status page's lines: every stream in the registry's order, "off" ones too.
    expect(plan.every.map((entry) => `${entry.stream} ${entry.cron}`)).toEqual([
      'trunk_calls */5 * * * *',
      'endpoints off',
      'caller_ids 0 * * * *',
      'messages off',
      'powerpacks */5 * * * *',
      'call_streams 30 2 * * *',
    ]);
  });

  it('schedules nothing when every stream is off', () => {
    const plan = planSchedule({
      trunk_calls: 'off',
      endpoints: 'off',
      caller_ids: 'off',
      messages: 'off',
      powerpacks: 'off',
      call_streams: 'off',
    });
    expect(plan.scheduled).toEqual([]);
    expect(plan.off).toHaveLength(6);
  });
});

describe('longestTickGapMinutes', () => {
  it('finds the longest pause between consecutive ticks', () => {
    const ticks = ['09:00', '09:30', '10:00', '17:00', '17:30'].map(
      (time) => new Date(`2025-06-02T${time}:00Z`),
    );
    expect(longestTickGapMinutes(ticks)).toBe(420);
  });

  it('is 0 with fewer than two ticks', () => {
    expect(longestTickGapMinutes([])).toBe(0);
    expect(longestTickGapMinutes([new Date()])).toBe(0);
  });
});
