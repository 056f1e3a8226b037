import type { ReceivedRecord } from '../../api/received-json.js';
import { CALL_STREAM_REFS } from '../../db/repositories/lookup-queue-repository.js';
import { CALL_STREAMS } from '../../db/table-specs.js';
import { normalizeCallStream } from '../../normalize/normalize-call-stream.js';
import { lookupStream } from './lookups.js';

/** The audio-stream records of the calls queued in call_stream_refs. */
export const CALL_STREAMS_STREAM = lookupStream({
  name: 'call_streams',
  description: 'audio-stream records of the calls queued in call_stream_refs',
  table: CALL_STREAMS,
  defaultSchedule: '*/5 * * * *',
  queue: CALL_STREAM_REFS,
  noun: 'call',
  fetch: async (run, key, options) => {
    const records: ReceivedRecord[] = [];
    for await (const page of run.client.iterateCallStreams(key, options))
      records.push(...page.records);
    return records;
  },
  normalize: normalizeCallStream,
  // A stream still running is looked up again later.
  recheck: (rows) => rows.some((row) => row.end_time === null),
});
