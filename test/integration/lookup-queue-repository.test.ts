import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enqueueLookups,
  MESSAGE_REFS,
  POWERPACK_REFS,
  recordLookupOutcomes,
  type LookupOutcome,
} from '../../src/db/repositories/lookup-queue-repository.js';
import { bothDatabases, createTestDatabase, type TestDatabase } from '../support/test-database.js';

const NOW = '2026-11-24T10:00:00.000000Z';
const LATER = '2026-11-24T10:05:00.000000Z';
const EARLIER = '2026-11-20T08:00:00.000000Z';

describe.each(bothDatabases())('recordLookupOutcomes ($description)', (target) => {
  let handle: TestDatabase;
  beforeAll(async () => {
    handle = await createTestDatabase({ target });
  });
  afterAll(async () => {
    await handle?.close();
  });

  it('records a round of every kind of outcome in one statement, touching only its own entries', async () => {
    const { db } = handle.database;
    const keys = ['m-fetched', 'm-recheck', 'm-missing', 'm-retry', 'm-given-up', 'm-untouched'];
    await enqueueLookups(db, MESSAGE_REFS, 'ACC1', keys, 'test', { retry: false });
    // The same key in another account; every ACC1 entry tried twice and fetched once before.
    await enqueueLookups(db, MESSAGE_REFS, 'ACC2', ['m-fetched'], 'test', { retry: false });
    await db
      .updateTable('message_refs')
      .set({ attempts: 2, fetched_at: EARLIER })
      .where('account_id', '=', 'ACC1')
      .execute();

    const outcomes = new Map<string, LookupOutcome>([
      ['m-fetched', { status: 'fetched' }],
      ['m-recheck', { status: 'recheck', nextAttemptAt: LATER }],
      ['m-missing', { status: 'not_found', error: 'HTTP 404: no such message' }],
      ['m-retry', { status: 'retry', error: 'HTTP 503', nextAttemptAt: LATER }],
      ['m-given-up', { status: 'retry', error: "it's gone\\again", nextAttemptAt: undefined }],
    ]);
    await db
      .transaction()
      .execute((trx) =>
        recordLookupOutcomes(trx, handle.database.schema, MESSAGE_REFS, 'ACC1', outcomes, NOW),
      );

    const rows = await db
      .selectFrom('message_refs')
      .select([
        'account_id',
        'message_uuid',
        'status',
        'attempts',
        'last_error',
        'next_attempt_at',
        'fetched_at',
      ])
      .orderBy('account_id')
      .orderBy('message_uuid')
      .execute();
    const iso = (value: unknown) =>
      value === null ? null : new Date(value as string).toISOString();
    expect(
      rows.map((row) => ({
        ...row,
        next_attempt_at: iso(row.next_attempt_at),
        fetched_at: iso(row.fetched_at),
      })),
    ).toEqual([
      {
        account_id: 'ACC1',
        message_uuid: 'm-fetched',
        status: 'fetched',
        attempts: 3,
        last_error: null,
        next_attempt_at: null,
        fetched_at: '2026-11-24T10:00:00.000Z',
      },
      {
        account_id: 'ACC1',
        message_uuid: 'm-given-up',
        status: 'failed',
        attempts: 3,
        last_error: "it's gone\\again",
        next_attempt_at: null,
        fetched_at: '2026-11-20T08:00:00.000Z',
      },
      {
        account_id: 'ACC1',
        message_uuid: 'm-missing',
        status: 'not_found',
        attempts: 3,
        last_error: 'HTTP 404: no such message',
        next_attempt_at: null,
        fetched_at: '2026-11-20T08:00:00.000Z',
      },
      {
        // A recheck is not an attempt that failed: it does not count.
        account_id: 'ACC1',
        message_uuid: 'm-recheck',
        status: 'pending',
        attempts: 2,
        last_error: null,
        next_attempt_at: '2026-11-24T10:05:00.000Z',
        fetched_at: '2026-11-24T10:00:00.000Z',
      },
      {
        account_id: 'ACC1',
        message_uuid: 'm-retry',
        status: 'pending',
        attempts: 3,
        last_error: 'HTTP 503',
        next_attempt_at: '2026-11-24T10:05:00.000Z',
        fetched_at: '2026-11-20T08:00:00.000Z',
      },
      {
        account_id: 'ACC1',
        message_uuid: 'm-untouched',
        status: 'pending',
        attempts: 2,
        last_error: null,
        next_attempt_at: null,
        fetched_at: '2026-11-20T08:00:00.000Z',
      },
      {
        account_id: 'ACC2',
        message_uuid: 'm-fetched',
        status: 'pending',
        attempts: 0,
        last_error: null,
        next_attempt_at: null,
        fetched_at: null,
      },
    ]);
  });

  it('leaves the queue as it was for an empty round', async () => {
    const { db, schema } = handle.database;
    await enqueueLookups(db, POWERPACK_REFS, 'ACC1', ['p-waiting'], 'test', { retry: false });
    const before = await db.selectFrom('powerpack_refs').selectAll().execute();
    await recordLookupOutcomes(db, schema, POWERPACK_REFS, 'ACC1', new Map(), NOW);
    expect(await db.selectFrom('powerpack_refs').selectAll().execute()).toEqual(before);
    expect(before).toMatchObject([{ powerpack_uuid: 'p-waiting', status: 'pending', attempts: 0 }]);
  });
});
