import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { jsonLines } from '../support/command-output.js';
import { runTelesync } from '../support/run-telesync.js';

const ACCOUNT = { authId: 'MA_E2E_SNAP', authToken: 'tok_e2e_snapshot_secret' };

const cli = useCliFixture({
  service: () =>
    startSimulator({
      seed: 'e2e-snapshots',
      calls: 2_000,
      endpoints: 45,
      callerIds: 25,
      messages: 300,
      packs: 4,
      accounts: [ACCOUNT],
    }),
  account: ACCOUNT,
});

describe('snapshots of endpoints and caller IDs', () => {
  it('store every endpoint and caller ID, registered or not', async () => {
    const result = await runTelesync(['sync', 'endpoints', 'caller_ids', '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    expect(
      jsonLines(result.stdout).map((run) => [run.stream, run.status, run.records_upserted]),
    ).toEqual([
      ['endpoints', 'succeeded', 45],
      ['caller_ids', 'succeeded', 25],
    ]);
    const endpoints = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sip_endpoints')
        .select(['endpoint_id', 'sip_registered', 'sip_contact', 'deleted_at'])
        .execute(),
    );
    expect(endpoints).toHaveLength(45);
    expect(endpoints.some((row) => row.sip_registered === true && row.sip_contact !== null)).toBe(
      true,
    );
    expect(endpoints.some((row) => row.sip_registered === false && row.sip_contact === null)).toBe(
      true,
    );
    expect(endpoints.every((row) => row.deleted_at === null)).toBe(true);
  });

  it('mark an endpoint removed at the service deleted, and clear the mark when it comes back', async () => {
    const victim = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sip_endpoints')
        .select('endpoint_id')
        .orderBy('endpoint_id')
        .limit(1)
        .executeTakeFirstOrThrow(),
    );
    const response = await fetch(
      `${cli.service.url}/__admin/endpoints/${ACCOUNT.authId}/${victim.endpoint_id}`,
      { method: 'DELETE' },
    );
    expect(response.ok).toBe(true);

    const result = await runTelesync(['sync', 'endpoints', '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    const deleted = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sip_endpoints')
        .select(['endpoint_id', 'deleted_at'])
        .where('deleted_at', 'is not', null)
        .execute(),
    );
    expect(deleted.map((row) => row.endpoint_id)).toEqual([victim.endpoint_id]);

    const back = await fetch(`${cli.service.url}/__admin/endpoints`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        account: ACCOUNT.authId,
        overrides: { endpoint_id: victim.endpoint_id },
      }),
    });
    expect(back.status).toBe(201);
    const comeback = await runTelesync(['sync', 'endpoints', '--json'], cli.env);
    expect(comeback.code, comeback.stderr).toBe(0);
    const row = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sip_endpoints')
        .select(['deleted_at', 'first_seen_at', 'last_seen_at'])
        .where('endpoint_id', '=', victim.endpoint_id)
        .executeTakeFirstOrThrow(),
    );
    expect(row.deleted_at).toBeNull();
    expect(Date.parse(row.last_seen_at)).toBeGreaterThan(Date.parse(row.first_seen_at));
  });

  it('refuse, loudly, a snapshot that would mark most endpoints deleted, and mark none', async () => {
    const survivors = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sip_endpoints')
        .select('endpoint_id')
        .where('deleted_at', 'is', null)
        .orderBy('endpoint_id')
        .execute(),
    );
    for (const row of survivors.slice(0, 30)) {
      const removed = await fetch(
        `${cli.service.url}/__admin/endpoints/${ACCOUNT.authId}/${row.endpoint_id}`,
        { method: 'DELETE' },
      );
      expect(removed.ok).toBe(true);
    }
    const result = await runTelesync(['sync', 'endpoints', '--json'], cli.env);
    expect(result.code).toBe(1);
    const [run] = jsonLines(result.stdout);
    expect(run).toMatchObject({ status: 'failed' });
    expect(String(run?.error)).toMatch(
      new RegExp(
        `refused to mark 30 of ${survivors.length} SIP endpoints deleted: more than 50% \\(TELESYNC_SNAPSHOT_DELETE_GUARD\\)`,
      ),
    );
    const deleted = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sip_endpoints')
        .select('endpoint_id')
        .where('deleted_at', 'is not', null)
        .execute(),
    );
    expect(deleted).toHaveLength(45 - survivors.length);

    // The operator confirms the deletions are real.
    const confirmed = await runTelesync(
      ['sync', 'endpoints', '--json'],
      cli.envWith({ TELESYNC_SNAPSHOT_DELETE_GUARD: '1' }),
    );
    expect(confirmed.code, confirmed.stderr).toBe(0);
    const afterwards = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sip_endpoints')
        .select('endpoint_id')
        .where('deleted_at', 'is not', null)
        .execute(),
    );
    expect(afterwards).toHaveLength(45 - survivors.length + 30);
  });
});

describe('lookups', () => {
  it('fetch queued messages, end unknown UUIDs as not_found, then fetch the packs they reference', async () => {
    const known = cli.service.dataset().accounts[0]!.exampleMessageUuids.slice(0, 3);
    const unknown = '00000000-0000-4000-8000-000000000000';
    await cli.database.inspect(({ db }) =>
      db
        .insertInto('message_refs')
        .values(
          [...known, unknown].map((uuid) => ({
            account_id: ACCOUNT.authId,
            message_uuid: uuid,
            requested_by: 'test',
          })),
        )
        .execute(),
    );

    const result = await runTelesync(['sync', 'messages', 'powerpacks', '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);

    const { refs, messages, packs, priorities } = await cli.database.inspect(async ({ db }) => ({
      refs: await db
        .selectFrom('message_refs')
        .select(['message_uuid', 'status', 'attempts'])
        .orderBy('message_uuid')
        .execute(),
      messages: await db
        .selectFrom('messages')
        .select(['message_uuid', 'is_domestic', 'error_code', 'powerpack_id', 'total_amount'])
        .execute(),
      packs: await db.selectFrom('powerpacks').select(['uuid', 'number_priority']).execute(),
      priorities: await db.selectFrom('powerpack_number_priorities').selectAll().execute(),
    }));
    expect(refs).toEqual(
      [
        ...known.map((uuid) => ({ message_uuid: uuid, status: 'fetched', attempts: 1 })),
        { message_uuid: unknown, status: 'not_found', attempts: 1 },
      ].sort((a, b) => a.message_uuid.localeCompare(b.message_uuid)),
    );
    expect(messages.map((message) => message.message_uuid).sort()).toEqual([...known].sort());
    for (const message of messages) {
      expect(typeof message.is_domestic).toBe('boolean');
      expect(message.error_code).toMatch(/^\d{3}$/);
      expect(message.total_amount).toMatch(/^\d+\.\d+$/);
    }
    const referenced = new Set(messages.map((message) => message.powerpack_id));
    expect(new Set(packs.map((pack) => pack.uuid))).toEqual(referenced);
    expect(priorities.length).toBeGreaterThan(0);
    expect(
      priorities.every(
        (row) =>
          [row.priority1, row.priority2, row.priority3].sort().join() ===
          'longcode,shortcode,tollfree',
      ),
    ).toBe(true);

    // Asking again for a UUID that was not found does not retry it by itself.
    const again = await runTelesync(['sync', 'messages', '--json'], cli.env);
    expect(jsonLines(again.stdout)[0]).toMatchObject({ status: 'succeeded', requests: 0 });
  });

  it('fetch the stream records of queued calls', async () => {
    const calls = cli.service.dataset().accounts[0]!.callsWithStreams.slice(0, 2);
    await cli.database.inspect(({ db }) =>
      db
        .insertInto('call_stream_refs')
        .values(
          calls.map((uuid) => ({
            account_id: ACCOUNT.authId,
            call_uuid: uuid,
            requested_by: 'test',
          })),
        )
        .execute(),
    );
    const result = await runTelesync(['sync', 'call_streams', '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    const streams = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('call_streams')
        .select(['call_uuid', 'stream_id', 'billed_amount', 'end_time'])
        .execute(),
    );
    expect(calls).toHaveLength(2);
    expect(new Set(streams.map((stream) => stream.call_uuid))).toEqual(new Set(calls));
    expect(streams.every((stream) => /^\d+\.\d+$/.test(stream.billed_amount ?? ''))).toBe(true);
    const refs = await cli.database.inspect(({ db }) =>
      db.selectFrom('call_stream_refs').select('status').where('call_uuid', 'in', calls).execute(),
    );
    expect(refs).toEqual(calls.map(() => ({ status: 'fetched' })));
  });

  it("end refs that are not identifiers ('.', '..', a path) as not_found with the reason, sending nothing", async () => {
    const bad = ['.', '..', '../Call', 'a/b', '%2e%2e'];
    await cli.database.inspect(async ({ db }) => {
      await db
        .insertInto('message_refs')
        .values(
          bad.map((ref) => ({
            account_id: ACCOUNT.authId,
            message_uuid: ref,
            requested_by: 'test',
          })),
        )
        .execute();
      await db
        .insertInto('call_stream_refs')
        .values(
          bad.map((ref) => ({ account_id: ACCOUNT.authId, call_uuid: ref, requested_by: 'test' })),
        )
        .execute();
    });
    const result = await runTelesync(['sync', 'messages', 'call_streams', '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    // Nothing was sent for them: these runs had no other entry due.
    expect(jsonLines(result.stdout).map((run) => [run.stream, run.status, run.requests])).toEqual([
      ['messages', 'succeeded', 0],
      ['call_streams', 'succeeded', 0],
    ]);
    const { messages, streams } = await cli.database.inspect(async ({ db }) => ({
      messages: await db
        .selectFrom('message_refs')
        .select(['message_uuid as ref', 'status', 'last_error'])
        .where('message_uuid', 'in', bad)
        .orderBy('message_uuid')
        .execute(),
      streams: await db
        .selectFrom('call_stream_refs')
        .select(['call_uuid as ref', 'status', 'last_error'])
        .where('call_uuid', 'in', bad)
        .orderBy('call_uuid')
        .execute(),
    }));
    for (const [rows, kind] of [
      [messages, 'message_uuid'],
      [streams, 'call_uuid'],
    ] as const) {
      expect(rows.map((row) => row.ref)).toEqual([...bad].sort());
      for (const row of rows) {
        expect(row.status).toBe('not_found');
        expect(row.last_error).toContain(`not a valid ${kind}: ${JSON.stringify(row.ref)}`);
        expect(row.last_error).toContain('nothing was sent');
      }
    }
  });
});
