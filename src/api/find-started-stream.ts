import { MICROS_PER_MINUTE, parseEpochMicros, type EpochMicros } from '../util/micros.js';
import type { ReceivedRecord } from './received-json.js';

/**
 * How far the service's clock may be behind telesync's when a stream record's time is compared
 * with the moment the start was sent. A stream at the same URL started earlier than this is not
 * the one asked for; the spec refuses a second active stream at one URL, so one started earlier
 * and still running would have made this start a 400.
 */
export const STREAM_CLOCK_SKEW_MICROS = 2 * MICROS_PER_MINUTE;

/** What a stream start sent, as far as the call's stream records can show it. */
export interface SentStreamStart {
  readonly serviceUrl: string;
  /** telesync's clock just before the request was sent. */
  readonly sentAtMicros: EpochMicros;
}

/** The stream records that may be the one a start whose answer was lost began. */
export interface StartedStreamSearch {
  /** Records of streams to the URL sent, begun at or after the request (or not begun yet). */
  readonly candidates: readonly { readonly streamId: string; readonly record: ReceivedRecord }[];
}

/**
 * Among a call's stream records (2.5, or the shorter shape of A42), those that may be the stream a
 * start began: to the same `service_url`, and created (or started) no earlier than the request was
 * sent, less the clock skew. A record that names no time at all may be it only when it has not
 * ended (a stream that has not connected yet). Exactly one candidate is the stream; none or several
 * leave the outcome unknown. Pure.
 */
export function findStartedStream(
  records: readonly ReceivedRecord[],
  sent: SentStreamStart,
  skewMicros: number = STREAM_CLOCK_SKEW_MICROS,
): StartedStreamSearch {
  const earliest = sent.sentAtMicros - skewMicros;
  const candidates: { streamId: string; record: ReceivedRecord }[] = [];
  for (const record of records) {
    const value = record.value;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) continue;
    const fields = value as Readonly<Record<string, unknown>>;
    if (fields.service_url !== sent.serviceUrl || typeof fields.stream_id !== 'string') continue;
    const begun = timeOf(fields.created_at) ?? timeOf(fields.start_time);
    const fits =
      begun !== undefined
        ? begun >= earliest
        : fields.end_time === null || fields.end_time === undefined || fields.end_time === '';
    if (fits) candidates.push({ streamId: fields.stream_id, record });
  }
  return { candidates };
}

function timeOf(value: unknown): EpochMicros | undefined {
  return typeof value === 'string' ? parseEpochMicros(value) : undefined;
}
