import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let handle: TestDatabase;
beforeAll(async () => {
  handle = await createTestDatabase();
});
afterAll(async () => {
  await handle?.close();
});

const call = (
  uuid: string,
  endTime: string,
  direction: string,
  billed: number,
  amount: string,
) => ({
  account_id: 'A',
  call_uuid: uuid,
  end_time: endTime,
  call_direction: direction,
  billed_duration: billed,
  total_amount: amount,
  raw: '{}',
});

describe('billing_daily', () => {
  it('sums calls per UTC day of end_time and direction, exactly', async () => {
    const { db } = handle.database;
    await db
      .insertInto('trunk_calls')
      .values([
        // 23:30 at -04:00 is the next UTC day.
        call('c1', '2026-11-19 23:30:00-04:00', 'outbound', 60, '0.00850000000001'),
        call('c2', '2026-11-20 10:00:00+00:00', 'outbound', 90, '0.01275'),
        call('c3', '2026-11-20 23:59:59.999999+00:00', 'inbound', 30, '0.1'),
        call('c4', '2026-11-21 00:00:00+00:00', 'inbound', 45, '0.2'),
      ])
      .execute();
    const rows = await db
      .selectFrom('billing_daily')
      .selectAll()
      .orderBy('day')
      .orderBy('direction')
      .execute();
    expect(rows).toEqual([
      {
        day: '2026-11-20',
        account_id: 'A',
        direction: 'inbound',
        calls: 1,
        billed_seconds: 30,
        billed_minutes: '0.5000',
        total_amount: '0.1',
        calls_billed_by_bill_duration: 0,
      },
      {
        day: '2026-11-20',
        account_id: 'A',
        direction: 'outbound',
        calls: 2,
        billed_seconds: 150,
        billed_minutes: '2.5000',
        total_amount: '0.02125000000001',
        calls_billed_by_bill_duration: 0,
      },
      {
        day: '2026-11-21',
        account_id: 'A',
        direction: 'inbound',
        calls: 1,
        billed_seconds: 45,
        billed_minutes: '0.7500',
        total_amount: '0.2',
        calls_billed_by_bill_duration: 0,
      },
    ]);
  });

  it('counts bill_duration for a call whose record has no billed_duration, and says for how many', async () => {
    const { db } = handle.database;
    const day = '2026-10-05';
    await db
      .insertInto('trunk_calls')
      .values([
        // The service's documented CDR: bill_duration alone (A39).
        {
          ...call('r1', `${day} 08:00:00+00:00`, 'outbound', 0, '0.00200'),
          billed_duration: null,
          bill_duration: 4,
        },
        {
          ...call('r2', `${day} 09:00:00+00:00`, 'outbound', 0, '0.03000'),
          billed_duration: null,
          bill_duration: 60,
        },
        // Both: billed_duration wins.
        { ...call('r3', `${day} 10:00:00+00:00`, 'outbound', 120, '0.06'), bill_duration: 100 },
        // Neither: nothing to count.
        { ...call('r4', `${day} 11:00:00+00:00`, 'outbound', 0, '0'), billed_duration: null },
      ])
      .execute();
    const row = await db
      .selectFrom('billing_daily')
      .selectAll()
      .where('day', '=', day)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      day,
      account_id: 'A',
      direction: 'outbound',
      calls: 4,
      billed_seconds: 184,
      billed_minutes: '3.0667',
      total_amount: '0.09200',
      calls_billed_by_bill_duration: 2,
    });
  });
});

describe('messages_billing_daily and call_streams_billing_daily', () => {
  it('sum messages and streams per UTC day', async () => {
    const { db } = handle.database;
    await db
      .insertInto('messages')
      .values([
        {
          account_id: 'A',
          message_uuid: 'm1',
          message_time: '2026-11-20 23:10:00.5+05:30',
          message_direction: 'outbound',
          message_type: 'sms',
          units: 2,
          total_amount: '0.0050',
          carrier_fees: '0.0030',
          raw: '{}',
        },
        {
          account_id: 'A',
          message_uuid: 'm2',
          message_time: '2026-11-20 12:00:00+00:00',
          message_direction: 'outbound',
          message_type: 'sms',
          units: 1,
          total_amount: '0.0025',
          carrier_fees: '0.0015',
          raw: '{}',
        },
      ])
      .execute();
    expect(await db.selectFrom('messages_billing_daily').selectAll().execute()).toEqual([
      {
        day: '2026-11-20',
        account_id: 'A',
        direction: 'outbound',
        message_type: 'sms',
        messages: 2,
        units: 3,
        total_amount: '0.0075',
        carrier_fees: '0.0045',
      },
    ]);

    await db
      .insertInto('call_streams')
      .values([
        {
          account_id: 'A',
          stream_id: 's1',
          call_uuid: 'c1',
          start_time: '2026-11-20 10:00:00+00:00',
          bill_duration: 21,
          rounded_bill_duration: 60,
          billed_amount: '0.0030',
          raw: '{}',
        },
        {
          account_id: 'A',
          stream_id: 's2',
          call_uuid: 'c1',
          start_time: null,
          bill_duration: 0,
          rounded_bill_duration: 0,
          billed_amount: '0',
          raw: '{}',
        },
      ])
      .execute();
    expect(await db.selectFrom('call_streams_billing_daily').selectAll().execute()).toEqual([
      {
        day: '2026-11-20',
        account_id: 'A',
        streams: 1,
        bill_seconds: 21,
        rounded_bill_seconds: 60,
        billed_amount: '0.0030',
      },
    ]);
  });
});
