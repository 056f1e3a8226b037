import { scheduleVariable } from '../../src/config/config-defaults.js';
import { STREAMS } from '../../src/sync/stream-registry.js';

/**
 * Every stream's schedule variable set to `off`: the environment of a worker or scheduler whose test
 * drives the streams itself (or turns on the few it needs) and wants no tick of its own.
 */
export const SCHEDULES_OFF: Readonly<Record<string, string>> = Object.fromEntries(
  STREAMS.map((stream) => [scheduleVariable(stream.name), 'off']),
);
