import { describe, expect, it } from 'vitest';
import type { StreamName } from '../../src/domain/streams.js';
import { isMalformedJob, parseAccountJob } from '../../src/jobs/parse-account-job.js';

const STREAMS: readonly StreamName[] = ['trunk_calls', 'endpoints'];

const window = {
  kind: 'backfill-window',
  accountId: 'MA1',
  start: '2026-03-01T00:00:00.000000Z',
  end: '2026-03-02T00:00:00.000000Z',
  backfillId: 'b1',
};

describe('parseAccountJob', () => {
  it('reads the jobs telesync enqueues, and nothing more of them', () => {
    expect(
      parseAccountJob(
        { kind: 'sync', accountId: 'MA1', stream: 'endpoints', x: 1 },
        STREAMS,
        'MA1',
      ),
    ).toEqual({ kind: 'sync', accountId: 'MA1', stream: 'endpoints' });
    expect(parseAccountJob(window, STREAMS, 'MA1')).toEqual(window);
    expect(parseAccountJob(window, STREAMS)).toEqual(window);
  });

  it.each([
    [null, 'job data is null, not an object'],
    [[1], 'job data is an array, not an object'],
    [{ kind: 'sync', stream: 'endpoints' }, 'job has no account id (accountId: missing)'],
    [
      { kind: 'sync', accountId: 'MA1', stream: 'sync_runs' },
      'sync job of MA1 names an unknown stream: "sync_runs"',
    ],
    [{ kind: 'resync', accountId: 'MA1' }, 'job of MA1 is of an unknown kind: "resync"'],
    [
      { ...window, start: '2026-02-30T00:00:00Z' },
      'backfill job of MA1 has a bad window: start "2026-02-30T00:00:00Z", end "2026-03-02T00:00:00.000000Z"',
    ],
    [
      { ...window, end: window.start },
      'backfill job of MA1 has an empty window: 2026-03-01T00:00:00.000000Z to 2026-03-01T00:00:00.000000Z',
    ],
    [{ ...window, backfillId: 7 }, 'backfill job of MA1 has no backfill id'],
  ])('refuses %j with the reason', (data, reason) => {
    const parsed = parseAccountJob(data, STREAMS, 'MA1');
    expect(isMalformedJob(parsed) ? parsed.malformed : parsed).toBe(reason);
  });

  it('refuses a job queued in another account’s group', () => {
    expect(parseAccountJob(window, STREAMS, 'MA2')).toEqual({
      malformed: 'job of account MA1 is queued in the group of MA2',
    });
  });
});
