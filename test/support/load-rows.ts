import type { LoadRow } from '../../src/db/data-loader.js';

/** A trunk_calls row as the normaliser makes it, for load tests; `overrides` change its raw JSON (and the api_id and total_amount read from it). */
export function trunkCallRow(uuid: string, overrides: Record<string, unknown> = {}): LoadRow {
  const raw = {
    call_uuid: uuid,
    api_id: 'req-1',
    total_amount: '0.00850000000001',
    note: 'tab\there "q" \\ back',
    ...overrides,
  };
  return {
    account_id: 'A',
    call_uuid: uuid,
    parent_call_uuid: null,
    conference_uuid: null,
    api_id: raw.api_id,
    resource_uri: `/v1/Account/A/Call/${uuid}/`,
    call_direction: 'outbound',
    call_state: 'ANSWER',
    from_number: '14155550100',
    to_number: 'sip:alice@example.com',
    initiation_time: '2026-11-20T10:00:00Z',
    answer_time: '2026-11-20T10:00:05Z',
    end_time: '2026-11-20T10:01:05.000001Z',
    call_duration: 65,
    bill_duration: 60,
    billed_duration: 60,
    total_rate: '0.00850',
    total_amount: raw.total_amount,
    hangup_cause_code: 4000,
    hangup_cause_name: 'Normal Hangup',
    hangup_source: 'Customer',
    stir_verification: 'Verified',
    stir_attestation: 'A',
    voice_network_group: '',
    source_ip: '10.0.0.1',
    raw: JSON.stringify(raw),
  };
}
