import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { jsonLines, lastJson } from '../support/command-output.js';
import type { CliDatabase } from '../support/test-database.js';
import { runTelesync } from '../support/run-telesync.js';

const ACCOUNT = { authId: 'MA_E2E_STATE', authToken: 'tok_e2e_state_secret' };

const cli = useCliFixture({
  service: () => startSimulator({ seed: 'e2e-state', calls: 2_000, accounts: [ACCOUNT] }),
  account: ACCOUNT,
});

/** Everything a dry run must leave alone, as text to compare before and after. */
async function bookkeeping(database: CliDatabase): Promise<string> {
  return database.inspect(async ({ db }) => {
    const runs = await db.selectFrom('sync_runs').selectAll().orderBy('id').execute();
    const windows = await db.selectFrom('sync_windows').selectAll().orderBy('slot_start').execute();
    const state = await db.selectFrom('sync_state').selectAll().orderBy('stream').execute();
    return JSON.stringify({ runs, windows, state });
  });
}

describe('dry runs change nothing and send nothing', () => {
  it('backfill --dry-run on an empty database plans the windows with unknown counts', async () => {
    cli.service.resetStats();
    const before = await bookkeeping(cli.database);
    const result = await runTelesync(
      ['backfill', '--days', '3', '--dry-run', '--json'],
      cli.envWith({ TELESYNC_MAX_RPS: '10' }),
    );
    expect(result.code, result.stderr).toBe(0);
    const plan = lastJson(result.stdout);
    expect(plan).toMatchObject({
      dry_run: true,
      stream: 'trunk_calls',
      mode: 'backfill',
      requests: null,
      max_rps: 10,
      seconds_at_max_rps: null,
    });
    const windows = plan.windows as { known_count: unknown; requests: unknown; start: string }[];
    expect(windows.length).toBeGreaterThanOrEqual(3);
    expect(windows.every((w) => w.known_count === null && w.requests === null)).toBe(true);
    expect(windows[0]!.start).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(await bookkeeping(cli.database)).toBe(before);
    expect(cli.service.stats().requests.total).toBe(0);
    const runs = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sync_runs')
        .select(sql<number>`count(*)`.as('n'))
        .executeTakeFirstOrThrow(),
    );
    expect(runs.n).toBe(0);
  });

  it('after a backfill, sync --dry-run knows the counts from the ledger and costs them at the rate', async () => {
    const backfill = await runTelesync(['backfill', '--days', '3'], cli.env);
    expect(backfill.code, backfill.stderr).toBe(0);
    cli.service.resetStats();
    const before = await bookkeeping(cli.database);
    const result = await runTelesync(
      ['sync', 'trunk_calls', 'messages', '--dry-run'],
      cli.envWith({ TELESYNC_MAX_RPS: '4' }),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(
      'dry run: nothing is sent to the service and nothing is written',
    );
    expect(result.stdout).toMatch(/count \(read before\), [\d,]+ known from the ledger, 1 request/);
    expect(result.stdout).toMatch(
      /requests: .*at 4 requests\/s \(the rate set for the account\): /,
    );
    expect(result.stdout).toMatch(
      /^messages +MA_E2E_STATE {2}dry run \(sync\): 0 lookups pending/m,
    );
    expect(await bookkeeping(cli.database)).toBe(before);
    expect(cli.service.stats().requests.total).toBe(0);

    const json = await runTelesync(['backfill', '--days', '3', '--dry-run', '--json'], cli.env);
    const plan = lastJson(json.stdout);
    const windows = plan.windows as { known_count: number | null; requests: number | null }[];
    // Every window the backfill read has its count in the ledger, so the cost is known.
    expect(windows.every((w) => w.known_count !== null)).toBe(true);
    expect(plan.requests).toBe(
      windows.reduce((sum, w) => sum + Math.max(1, Math.ceil(w.known_count! / 20)), 0),
    );
  });
});

describe('state show and state reset', () => {
  it('state show --json gives the watermark, ledger summary and queues of each stream', async () => {
    const sync = await runTelesync(['sync', 'trunk_calls'], cli.env);
    expect(sync.code, sync.stderr).toBe(0);
    const result = await runTelesync(['state', 'show', '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    const streams = (lastJson(result.stdout).streams as Record<string, unknown>[]).filter(
      (s) => s.account === ACCOUNT.authId,
    );
    expect(streams.map((s) => s.stream)).toEqual([
      'trunk_calls',
      'endpoints',
      'caller_ids',
      'messages',
      'powerpacks',
      'call_streams',
    ]);
    const trunk = streams[0]!;
    expect(trunk.watermark).toMatch(/\.\d{6}Z$/);
    const windows = trunk.windows as Record<string, unknown>;
    expect(windows.complete).toBeGreaterThanOrEqual(3);
    expect(windows).toMatchObject({ incomplete: 0, failed: 0, planned: 0 });
    expect(streams[3]).toMatchObject({
      stream: 'messages',
      windows: null,
      lookups: { pending: 0, fetched: 0, not_found: 0, failed: 0 },
    });

    const text = await runTelesync(['state', 'show', 'trunk_calls'], cli.env);
    expect(text.stdout).toMatch(/trunk_calls +watermark \d{4}-/);
    expect(text.stdout).toMatch(/windows: \d+ complete, 0 incomplete, 0 failed, 0 planned/);
    expect(text.stdout).not.toContain('endpoints');
  });

  it('state reset refuses to run unconfirmed off a terminal (exit 2, names --yes) and changes nothing', async () => {
    const before = await bookkeeping(cli.database);
    const result = await runTelesync(['state', 'reset', 'trunk_calls'], cli.env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('add --yes to confirm');
    expect(await bookkeeping(cli.database)).toBe(before);
  });

  it('state reset --from sets the watermark back, reopens the windows from there, keeps the rows, and is recorded', async () => {
    const rowsBefore = await countCalls(cli.database);
    const from = new Date(Date.now() - 36 * 60 * 60 * 1000).toISOString().slice(0, 10);
    const result = await runTelesync(
      ['state', 'reset', 'trunk_calls', '--from', from, '--yes'],
      cli.env,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/trunk_calls MA_E2E_STATE {2}reset \(run \d+\): watermark .* → /);
    const after = await cli.database.inspect(async ({ db }) => ({
      state: await db
        .selectFrom('sync_state')
        .select('watermark')
        .where('stream', '=', 'trunk_calls')
        .executeTakeFirstOrThrow(),
      windows: await db
        .selectFrom('sync_windows')
        .select(['status', sql<string>`upper(time_range)`.as('end')])
        .execute(),
      run: await db
        .selectFrom('sync_runs')
        .select(['command', 'status', 'stream'])
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirstOrThrow(),
    }));
    expect(Date.parse(after.state.watermark!)).toBeLessThanOrEqual(Date.parse(`${from}T00:00:00Z`));
    const reopened = after.windows.filter(
      (w) => Date.parse(w.end) > Date.parse(`${from}T00:00:00Z`),
    );
    expect(reopened.length).toBeGreaterThan(0);
    expect(reopened.every((w) => w.status === 'planned')).toBe(true);
    expect(after.windows.some((w) => w.status === 'complete')).toBe(true);
    expect(after.run).toEqual({
      command: 'state reset',
      status: 'succeeded',
      stream: 'trunk_calls',
    });
    expect(await countCalls(cli.database)).toBe(rowsBefore);

    // The next sync reads the reopened windows again and leaves them complete.
    const sync = await runTelesync(['sync', 'trunk_calls', '--json'], cli.env);
    expect(sync.code, sync.stderr).toBe(0);
    const planned = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sync_windows')
        .select(sql<number>`count(*)`.as('n'))
        .where('status', '!=', 'complete')
        .executeTakeFirstOrThrow(),
    );
    expect(planned.n).toBe(0);
  });

  it('state reset of a lookup stream puts its queue entries back to pending', async () => {
    await cli.database.inspect(({ db }) =>
      db
        .insertInto('message_refs')
        .values([
          { account_id: ACCOUNT.authId, message_uuid: 'gone-1', status: 'not_found', attempts: 1 },
          { account_id: ACCOUNT.authId, message_uuid: 'gone-2', status: 'failed', attempts: 5 },
        ])
        .execute(),
    );
    const result = await runTelesync(
      ['state', 'reset', 'messages', '--account', ACCOUNT.authId, '--yes'],
      cli.env,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('2 lookups re-queued');
    const show = await runTelesync(['state', 'show', 'messages', '--json'], cli.env);
    expect(jsonLines(show.stdout)[0]).toMatchObject({
      streams: [{ stream: 'messages', lookups: { pending: 2, not_found: 0, failed: 0 } }],
    });
  });

  it('refuses --from for a snapshot stream (exit 2)', async () => {
    const result = await runTelesync(
      ['state', 'reset', 'endpoints', '--from', '2026-01-01', '--yes'],
      cli.env,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('drop --from');
  });
});

async function countCalls(database: CliDatabase): Promise<number> {
  const row = await database.inspect(({ db }) =>
    db
      .selectFrom('trunk_calls')
      .select(sql<number>`count(*)`.as('n'))
      .executeTakeFirstOrThrow(),
  );
  return row.n;
}
