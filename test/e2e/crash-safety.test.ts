import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connect.js';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { lastJson } from '../support/command-output.js';
import type { CliDatabase } from '../support/test-database.js';
import { runTelesync, startTelesync } from '../support/run-telesync.js';
import { waitFor } from '../support/telesync-process.js';

const ACCOUNT = { authId: 'MA_E2E_CRASH', authToken: 'tok_e2e_crash_secret' };
const DAY_MS = 24 * 60 * 60 * 1000;
const KILLS = 10;

/**
 * When a kill lands: `afterSpawnMs` after the process starts (in its start-up, before any commit),
 * or `afterFirstRequestMs` after the service sees its first request, so that kills inside the work
 * do not depend on how long start-up takes (longer when the sources run through tsx).
 */
type KillMoment = { afterSpawnMs: number } | { afterFirstRequestMs: number };

/** Starts `telesync`, SIGKILLs it at `moment`; resolves with how it ended. */
async function runAndKill(
  args: string[],
  env: Record<string, string>,
  service: RunningSimulator,
  moment: KillMoment,
): Promise<{ killed: boolean; code: number | null; stderr: string }> {
  const requestsBefore = service.stats().requests.total;
  // startTelesync's time limit is a SIGKILL.
  const child = startTelesync(
    args,
    env,
    'afterSpawnMs' in moment ? { timeoutMs: moment.afterSpawnMs } : {},
  );
  if ('afterFirstRequestMs' in moment) {
    await waitFor(() => child.hasExited() || service.stats().requests.total > requestsBefore, {
      intervalMs: 5,
      what: 'the first request of the run',
    });
    await new Promise((resolve) => setTimeout(resolve, moment.afterFirstRequestMs));
    child.kill('SIGKILL');
  }
  const { code, signal, stderr } = await child.exited;
  return { killed: signal === 'SIGKILL', code, stderr };
}

/** Every stored call, every column but the sync's own timestamps, raw included, in key order. */
async function snapshotOf(database: Database): Promise<string[]> {
  const result = await sql<{ row: string }>`
    SELECT (to_jsonb(t) - 'synced_at' - 'changed_at')::text AS row
      FROM ${sql.table(`${database.schema}.trunk_calls`)} t
     ORDER BY call_uuid
  `.execute(database.root);
  return result.rows.map((row) => row.row);
}

describe('a backfill killed at random moments and resumed', () => {
  const cli = useCliFixture({
    service: () =>
      startSimulator({
        seed: 'e2e-crash',
        calls: 40_000,
        accounts: [ACCOUNT],
        faults: { malformed: 0.005 },
      }),
    account: ACCOUNT,
    // Slow enough that every kill lands somewhere inside the work, not after it.
    env: { TELESYNC_MAX_RPS: '150', TELESYNC_BATCH_SIZE: '500' },
  });
  const from = new Date(Date.now() - 40 * DAY_MS).toISOString().slice(0, 10);
  const to = new Date(Date.now() - 2 * DAY_MS).toISOString().slice(0, 10);
  const args = ['backfill', '--from', from, '--to', to];
  /** Killed again and again, then resumed. */
  let crashed: CliDatabase;
  /** Run once, uninterrupted: what the crashed one must end up equal to. */
  let clean: CliDatabase;

  /** The uninterrupted backfill's outcome, run once for both tests whichever runs first. */
  let cleanRun: Promise<Record<string, unknown>> | undefined;
  const runClean = () =>
    (cleanRun ??= runTelesync([...args, '--json'], cli.envFor(clean)).then((run) => {
      expect(run.code, run.stderr).toBe(0);
      return lastJson(run.stdout);
    }));

  beforeAll(async () => {
    crashed = cli.database;
    clean = await cli.addDatabase();
  });

  it(`ends with the same database as a clean run, row for row and raw byte for byte, after ${KILLS} kills`, async () => {
    const moments: KillMoment[] = [];
    let kills = 0;
    for (let attempt = 0; attempt < KILLS * 3 && kills < KILLS; attempt++) {
      // Every fourth in start-up, the others from the first request to well into the run.
      const moment: KillMoment =
        attempt % 4 === 0
          ? { afterSpawnMs: 50 + Math.floor(Math.random() * 250) }
          : { afterFirstRequestMs: Math.floor(Math.random() * 1000) };
      moments.push(moment);
      const outcome = await runAndKill(args, cli.envFor(crashed), cli.service, moment);
      if (outcome.killed) kills++;
      else
        expect(
          outcome.code,
          `run ended on its own; kills: ${JSON.stringify(moments)}\n${outcome.stderr}`,
        ).toBe(0);
      if (!outcome.killed) break;
    }
    expect(kills, `kills: ${JSON.stringify(moments)}`).toBeGreaterThanOrEqual(KILLS);

    const resumed = await runTelesync([...args, '--json'], cli.envFor(crashed));
    expect(resumed.code, resumed.stderr).toBe(0);
    await runClean();

    const crashedRows = await crashed.inspect(snapshotOf);
    const cleanRows = await clean.inspect(snapshotOf);
    expect(cleanRows.length).toBeGreaterThan(10_000);
    expect(crashedRows.length).toBe(cleanRows.length);
    expect(crashedRows).toEqual(cleanRows);

    const quarantine = async (database: CliDatabase) =>
      database.inspect(
        async ({ db }) =>
          await db
            .selectFrom('rejected_records')
            .select(['payload_sha256', 'raw_payload', 'reason'])
            .orderBy('payload_sha256')
            .execute(),
      );
    const crashedRejects = await quarantine(crashed);
    expect(crashedRejects.length).toBeGreaterThan(0);
    expect(crashedRejects).toEqual(await quarantine(clean));

    // Nothing half-written is visible as complete, and the killed runs are closed, not left running.
    const { windows, runs } = await crashed.inspect(async ({ db }) => ({
      windows: await db.selectFrom('sync_windows').select('status').distinct().execute(),
      runs: await db
        .selectFrom('sync_runs')
        .select(['status', sql<number>`count(*)`.as('n')])
        .groupBy('status')
        .execute(),
    }));
    expect(windows).toEqual([{ status: 'complete' }]);
    expect(runs.find((row) => row.status === 'running')).toBeUndefined();
    // A kill in start-up may come before the run's row exists; a run killed after its first
    // request had its row, closed as failed by the next run.
    const killedInWork = moments.filter((moment) => 'afterFirstRequestMs' in moment).length;
    expect(killedInWork).toBeGreaterThanOrEqual(1);
    expect(Number(runs.find((row) => row.status === 'failed')?.n)).toBeGreaterThanOrEqual(
      killedInWork,
    );
  });
  it('stops on Ctrl-C after the batch in hand, saying so, and the same command resumes where it stopped', async () => {
    const stopped = await cli.addDatabase();
    const requestsBefore = cli.service.stats().requests.total;
    const child = startTelesync([...args, '--json'], cli.envFor(stopped));
    // Interrupted once a few windows are read (a day is about ten pages), whatever the machine's
    // speed: a fixed delay could land before the handler is set up on a busy machine.
    await waitFor(
      () => child.hasExited() || cli.service.stats().requests.total >= requestsBefore + 60,
      { timeoutMs: 60_000, what: 'the backfill to read a few windows' },
    );
    child.kill('SIGINT');
    const { code, stdout, stderr } = await child.exited;
    expect(code, stderr).toBe(1);
    expect(stderr).toContain(
      'stopping after the batch in hand; run the same command again to resume',
    );
    const outcome = lastJson(stdout);
    expect(outcome).toMatchObject({ status: 'stopped' });
    expect(outcome.records_fetched).toBe(
      Number(outcome.records_upserted) + Number(outcome.records_rejected),
    );
    const done = Number(outcome.windows_completed);
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(Number(outcome.windows_planned));

    const resumed = await runTelesync([...args, '--json'], cli.envFor(stopped));
    expect(resumed.code, resumed.stderr).toBe(0);
    const second = lastJson(resumed.stdout);
    expect(second.status).toBe('succeeded');
    // The windows read before the stop were skipped: fewer requests than a whole backfill.
    const whole = await runClean();
    expect(Number(second.requests)).toBeLessThan(Number(whole.requests));
    expect(await stopped.inspect(snapshotOf)).toEqual(await clean.inspect(snapshotOf));
  });
});
