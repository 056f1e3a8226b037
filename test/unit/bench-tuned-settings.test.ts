import { describe, expect, it } from 'vitest';
import { sameAsDefaults, tunedSettings } from '../../bench/multi-account.js';
import { CONFIG_DEFAULTS } from '../../src/config/config-defaults.js';

describe("benchmark 7's worked-out settings", () => {
  it('are the defaults on a machine whose COPY limit takes every account: not run twice', () => {
    const tuned = tunedSettings({ rowsPerSecond: 36_753, bestLanes: 4 }, 1_200, 50);
    expect(tuned).toEqual({ accountConcurrency: 50, loadConnections: 4 });
    expect(CONFIG_DEFAULTS.loadConnections).toBe(4);
    expect(sameAsDefaults(tuned, 50)).toBe(true);
  });

  it('differ on a machine whose COPY limit is low: then compared in alternated runs', () => {
    const tuned = tunedSettings({ rowsPerSecond: 9_000, bestLanes: 2 }, 1_200, 50);
    expect(tuned).toEqual({ accountConcurrency: 15, loadConnections: 2 });
    expect(sameAsDefaults(tuned, 50)).toBe(false);
    expect(sameAsDefaults({ ...tuned, accountConcurrency: 50 }, 50)).toBe(false);
    expect(sameAsDefaults({ ...tuned, loadConnections: 4 }, 50)).toBe(false);
  });
});
