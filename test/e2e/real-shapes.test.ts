import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { jsonLines, lastJson } from '../support/command-output.js';
import { runTelesync } from '../support/run-telesync.js';
import {
  canonicalDecimal,
  oracleCalls,
  sortedCallUuids,
  sumDecimals,
} from '../support/simulator-oracle.js';
import { answerText } from '../../src/simulator/routes/sim-answer.js';

/**
 * The whole pipeline against a simulator serving the real service's shapes (docs/assumptions.md
 * A38–A45): trunk times without offset and with fields missing, 9-digit fractions, null message
 * fields, a numeric application_id, the short stream list. The database must equal the
 * simulator's data exactly.
 */

const ACCOUNT = { authId: 'MA_E2E_REAL', authToken: 'tok_e2e_real_shapes_secret' };

const cli = useCliFixture({
  service: () =>
    startSimulator({
      seed: 'e2e-real',
      calls: 3_000,
      endpoints: 30,
      callerIds: 25,
      messages: 200,
      packs: 8,
      accounts: [ACCOUNT],
      realShapes: true,
    }),
  account: ACCOUNT,
  env: { TELESYNC_CONCURRENCY: '4' },
});

/** The body text the simulator answers for `path` (under the account), read without telesync. */
function oracleText(sim: RunningSimulator, path: string): string {
  const authorization = `Basic ${Buffer.from(`${ACCOUNT.authId}:${ACCOUNT.authToken}`).toString('base64')}`;
  const outcome = sim.simulator.state.outsideBudget(() =>
    sim.simulator.handle({
      method: 'GET',
      url: `/v1/Account/${ACCOUNT.authId}/${path}`,
      authorization,
      body: '',
    }),
  );
  if (outcome.kind !== 'answer' || outcome.answer.status !== 200) {
    throw new Error(`oracle request failed: ${JSON.stringify(outcome)}`);
  }
  return answerText(outcome.answer);
}

/** A stored timestamp as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC, all six fraction digits). */
const utcMicros = (column: string) =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** A service time (with or without an offset or fraction) as the same form, the fraction cut at 6. */
function serviceTimeMicros(value: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})?$/.exec(
    value,
  );
  if (match === null) throw new Error(`not a service time: ${value}`);
  const [, date, time, fraction = '', zone = 'Z'] = match;
  const whole = new Date(`${date}T${time}${zone === 'Z' ? 'Z' : zone}`).toISOString();
  return `${whole.slice(0, 19)}.${fraction.slice(0, 6).padEnd(6, '0')}Z`;
}

describe('against the real service shapes', () => {
  it('a 90-day backfill stores every call exactly, times without offset read as UTC', async () => {
    const result = await runTelesync(['backfill', '--days', '90', '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    const outcome = lastJson(result.stdout);
    expect(outcome).toMatchObject({ status: 'succeeded', records_rejected: 0 });
    const from = String(outcome.covered_from);
    const to = String(outcome.covered_to);

    const expected = oracleCalls(cli.service, Date.parse(from), Date.parse(to));
    expect(expected.length).toBeGreaterThanOrEqual(2_000);
    // The service really sends the real shape: no offset, no billed_duration.
    expect(expected[0]!.end_time).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(JSON.parse(expected[0]!.text)).not.toHaveProperty('billed_duration');

    const stored = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('trunk_calls')
        .select([
          'call_uuid',
          'total_amount',
          utcMicros('end_time').as('end_time'),
          'billed_duration',
          'source_ip',
          'parent_call_uuid',
        ])
        .where('end_time', '>=', from)
        .where('end_time', '<', to)
        .orderBy('call_uuid')
        .execute(),
    );
    expect(stored.map((row) => row.call_uuid)).toEqual(sortedCallUuids(expected));
    expect(canonicalDecimal(sumDecimals(stored.map((row) => row.total_amount ?? '')))).toBe(
      canonicalDecimal(sumDecimals(expected.map((call) => call.total_amount))),
    );
    const endTimes = new Map(
      expected.map((call) => [call.call_uuid, serviceTimeMicros(call.end_time)]),
    );
    expect(stored.filter((row) => row.end_time !== endTimes.get(row.call_uuid))).toEqual([]);
    // Fields the real CDR leaves out are NULL, never invented.
    expect(
      stored.filter(
        (row) =>
          row.billed_duration !== null || row.source_ip !== null || row.parent_call_uuid !== null,
      ),
    ).toEqual([]);
  });

  it('a caller-ID snapshot keeps the first 6 of the 9 fraction digits', async () => {
    const result = await runTelesync(['sync', 'endpoints', 'caller_ids', '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    expect(jsonLines(result.stdout).map((run) => [run.stream, run.status])).toEqual([
      ['endpoints', 'succeeded'],
      ['caller_ids', 'succeeded'],
    ]);
    const served = (
      JSON.parse(oracleText(cli.service, 'VerifiedCallerId/?limit=20&offset=0')) as {
        meta: { total_count: number };
      }
    ).meta.total_count;
    const expected = new Map<string, string>();
    for (let offset = 0; offset < served; offset += 20) {
      const page = JSON.parse(
        oracleText(cli.service, `VerifiedCallerId/?limit=20&offset=${offset}`),
      ) as { objects: { phone_number: string; created_at: string }[] };
      for (const item of page.objects) expected.set(item.phone_number, item.created_at);
    }
    expect([...expected.values()].every((value) => /\.\d{9}Z$/.test(value))).toBe(true);

    const stored = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('verified_caller_ids')
        .select(['phone_number', utcMicros('created_at').as('created_at')])
        .execute(),
    );
    expect(stored).toHaveLength(served);
    expect(Object.fromEntries(stored.map((row) => [row.phone_number, row.created_at]))).toEqual(
      Object.fromEntries(
        [...expected].map(([phone, createdAt]) => [phone, serviceTimeMicros(createdAt)]),
      ),
    );
  });

  it('message and pack lookups store null error codes as NULL and application_id digit for digit', async () => {
    const known = cli.service.dataset().accounts[0]!.exampleMessageUuids.slice(0, 4);
    const result = await runTelesync(['lookup', 'messages', ...known], cli.env);
    expect(result.code, result.stderr).toBe(0);

    // Every pack of the account too, not only those the messages name: some have an application.
    const allPacks = cli.service.simulator.state.accounts.get(ACCOUNT.authId)!.dataset.packs();
    await cli.database.inspect(({ db }) =>
      db
        .insertInto('powerpack_refs')
        .values(
          allPacks.map((pack) => ({
            account_id: ACCOUNT.authId,
            powerpack_uuid: pack.uuid,
            requested_by: 'test',
          })),
        )
        .onConflict((conflict) => conflict.doNothing())
        .execute(),
    );
    const packRun = await runTelesync(['sync', 'powerpacks', '--json'], cli.env);
    expect(packRun.code, packRun.stderr).toBe(0);

    const { messages, packs } = await cli.database.inspect(async ({ db }) => ({
      messages: await db
        .selectFrom('messages')
        .select([
          'message_uuid',
          'error_code',
          'dlt_entity_id',
          'conversation_id',
          'total_amount',
          'powerpack_id',
        ])
        .orderBy('message_uuid')
        .execute(),
      packs: await db.selectFrom('powerpacks').select(['uuid', 'application_id']).execute(),
    }));
    expect(messages.map((row) => row.message_uuid)).toEqual([...known].sort());
    for (const row of messages) {
      const served = JSON.parse(oracleText(cli.service, `Message/${row.message_uuid}/`)) as {
        error_code: unknown;
        total_amount: string;
      };
      expect(served.error_code).toBeNull();
      expect(row).toMatchObject({
        error_code: null,
        dlt_entity_id: null,
        conversation_id: null,
        total_amount: served.total_amount,
      });
    }
    expect(new Set(packs.map((pack) => pack.uuid))).toEqual(
      new Set(allPacks.map((pack) => pack.uuid)),
    );
    let numeric = 0;
    for (const pack of packs) {
      // Read as text: JSON.parse would round a number past 2^53.
      const text = oracleText(cli.service, `Powerpack/${pack.uuid}/`);
      const digits = /"application_id":(\d+|null)/.exec(text)?.[1];
      expect(digits).toBeDefined();
      expect(pack.application_id).toBe(digits === 'null' ? null : digits);
      if (digits !== 'null') numeric += 1;
    }
    expect(numeric).toBeGreaterThan(0);
  });

  it('a stream lookup reads the short stream list (meta.count, "" next)', async () => {
    const calls = cli.service.dataset().accounts[0]!.callsWithStreams.slice(0, 2);
    const result = await runTelesync(['lookup', 'streams', ...calls], cli.env);
    expect(result.code, result.stderr).toBe(0);
    const lists = calls.map(
      (call) =>
        JSON.parse(oracleText(cli.service, `Call/${call}/Stream/`)) as {
          meta: Record<string, unknown>;
          objects: { stream_id: string; status: string }[];
        },
    );
    const served = lists.flatMap((list) => list.objects);
    expect(served.length).toBeGreaterThan(0);
    for (const list of lists) {
      expect(list.meta).toMatchObject({ count: list.objects.length, next: '', previous: '' });
      expect(list.meta).not.toHaveProperty('total_count');
    }
    const stored = await cli.database.inspect(({ db }) =>
      db.selectFrom('call_streams').select(['stream_id', 'service_auth_id']).execute(),
    );
    expect(stored.map((row) => row.stream_id).sort()).toEqual(
      served.map((stream) => stream.stream_id).sort(),
    );
    expect(stored.every((row) => row.service_auth_id === null)).toBe(true);
  });

  it('rejected nothing', async () => {
    const rejected = await cli.database.inspect(({ db }) =>
      db.selectFrom('rejected_records').select(['stream', 'reason']).execute(),
    );
    expect(rejected).toEqual([]);
  });
});
