import type { HANGUP_SOURCES } from '../../api/trunk-call-query.js';
import type { AudioTrack, StreamRecordWire, TrunkCallRecordWire } from '../../api/wire-types.js';
import { formatServiceTime, MICROS_PER_SECOND, type EpochMicros } from '../../util/micros.js';
import { formatDecimalUnits, roundUpToMinute } from './decimal-text.js';
import { hashIndex, Rng, unitFraction } from './prng.js';

/**
 * The content of simulated trunk calls and of the streams recorded on them: realistic values drawn
 * from a per-call generator, with every amount and duration consistent. Pure.
 */

/** What is fixed for one account: its own numbers, PBX addresses and SIP host. */
export interface CallProfile {
  /** The account's own numbers (DIDs), digits without a plus. */
  readonly ownNumbers: readonly string[];
  /** Addresses the account's PBXs send from. */
  readonly pbxAddresses: readonly string[];
  /** Host of the SIP URIs the account's calls are routed to. */
  readonly sipHost: string;
  /** Host of the WebSocket URLs streams are sent to. */
  readonly streamHost: string;
}

const US_AREA_CODES = ['415', '212', '312', '646', '720', '213', '617', '305', '206', '512'];
const SIP_USERS = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan'];

/** Builds an account's call profile from its generator. */
export function createCallProfile(rng: Rng): CallProfile {
  const ownNumbers: string[] = [];
  for (let k = 0; k < 12; k++) ownNumbers.push(usNumber(rng));
  ownNumbers.push(`4420${rng.digits(8)}`, `4420${rng.digits(8)}`);
  const pbxAddresses = [1, 2, 3].map(() => `198.51.100.${rng.between(2, 254)}`);
  const slug = rng.hex(6);
  return {
    ownNumbers,
    pbxAddresses,
    sipHost: `pbx-${slug}.sip.example.com`,
    streamHost: `media-${slug}.example.com`,
  };
}

function usNumber(rng: Rng): string {
  return `1${rng.pick(US_AREA_CODES)}${rng.between(2, 9)}${rng.digits(6)}`;
}

interface Destination {
  /** Draws a number in the destination, digits without a plus. */
  readonly number: (rng: Rng) => string;
  /** Per-minute rate of an outbound call to it, units of 0.00001. */
  readonly outboundRate: number;
}

/** Countries calls reach, with how often each is reached. */
const DESTINATIONS: readonly (readonly [Destination, number])[] = [
  [{ number: usNumber, outboundRate: 850 }, 62],
  [{ number: (rng) => `447${rng.digits(9)}`, outboundRate: 1_200 }, 10],
  [{ number: (rng) => `919${rng.digits(9)}`, outboundRate: 2_100 }, 10],
  [{ number: (rng) => `4915${rng.digits(9)}`, outboundRate: 1_500 }, 9],
  [{ number: (rng) => `614${rng.digits(8)}`, outboundRate: 2_500 }, 9],
];

/** Per-minute rate of inbound calls, units of 0.00001. */
const INBOUND_RATE_UNITS = 450;

/**
 * Hangup causes of answered calls. The record's hangup_source names who hung up as the trunk sees
 * the call (Caller, Callee) or Error when the trunk itself ended it; the list filter speaks of the
 * customer's side instead (see hangupSideOf and assumption A29).
 */
/** STIR/SHAKEN attestation levels and their weights. */
const ATTESTATIONS: readonly (readonly [string, number])[] = [
  ['A', 70],
  ['B', 20],
  ['C', 10],
];

/** Audio tracks of recorded streams and their weights. */
const AUDIO_TRACKS: readonly (readonly [AudioTrack, number])[] = [
  ['inbound', 60],
  ['outbound', 15],
  ['both', 25],
];

const HANGUPS: readonly (readonly [
  { code: number; name: string; source: RecordHangupSource },
  number,
])[] = [
  [{ code: 4000, name: 'Normal Hangup', source: 'Caller' }, 46],
  [{ code: 4000, name: 'Normal Hangup', source: 'Callee' }, 44],
  [{ code: 8011, name: 'Media Timeout', source: 'Error' }, 6],
  [{ code: 8000, name: 'Internal Error', source: 'Error' }, 4],
];

/** Values of hangup_source in records (assumption A29). */
export type RecordHangupSource = 'Caller' | 'Callee' | 'Error';
/** Values of the hangup_source filter (spec 4.6). */
export type HangupSide = (typeof HANGUP_SOURCES)[number];

/**
 * Which side of the trunk a record's hangup_source stands for (assumption A29): the customer is
 * the caller of an outbound call and the callee of an inbound one; the carrier is the other party;
 * Error is the trunk. Undefined for a value the simulator does not know.
 */
export function hangupSideOf(direction: string, source: string): HangupSide | undefined {
  if (source === 'Error') return 'trunk';
  if (source === 'Caller') return direction === 'outbound' ? 'customer' : 'carrier';
  if (source === 'Callee') return direction === 'outbound' ? 'carrier' : 'customer';
  return undefined;
}

/** UTC offsets the service writes times in (minutes east), with how often each is used. */
const OFFSETS_MINUTES: readonly (readonly [number, number])[] = [
  [0, 30],
  [330, 12],
  [-240, 15],
  [-420, 12],
  [60, 12],
  [540, 10],
  [345, 9],
];

const VOICE_NETWORK_GROUPS = ['us-east-core', 'eu-west-edge'];

/** The fields of a call a list filter can test, named as on the wire. */
export type TrunkCallFilterView = Pick<
  TrunkCallRecordWire,
  | 'from_number'
  | 'to_number'
  | 'call_direction'
  | 'bill_duration'
  | 'hangup_cause_code'
  | 'hangup_source'
  | 'stir_verification'
>;

/** Everything about one call except its identifiers, before any text is formatted. */
export interface TrunkCallFacts extends TrunkCallFilterView {
  readonly endMicros: EpochMicros;
  readonly answerMicros: EpochMicros;
  readonly initiationMicros: EpochMicros;
  /** Offset the call's times are written in, minutes east of UTC. */
  readonly offsetMinutes: number;
  readonly call_duration: number;
  readonly billed_duration: number;
  /** Per-minute rate, units of 0.00001. */
  readonly rateUnits: number;
  readonly hangup_cause_name: string;
  readonly Stir_attestation: string;
  readonly voice_network_group: string;
  readonly source_ip: string;
}

/**
 * Draws one call that ends at `endMicros` (whole seconds). Durations are consistent:
 * initiation ≤ answer ≤ end, call_duration = end − initiation ≥ bill_duration = end − answer, and
 * billed_duration is bill_duration rounded up to whole minutes.
 */
export function generateTrunkCallFacts(
  profile: CallProfile,
  rng: Rng,
  endMicros: EpochMicros,
): TrunkCallFacts {
  const direction = rng.chance(0.55) ? 'outbound' : 'inbound';
  const destination = rng.pickWeighted(DESTINATIONS);
  const external = destination.number(rng);
  const own = rng.pick(profile.ownNumbers);
  let fromNumber: string;
  let toNumber: string;
  if (direction === 'outbound') {
    fromNumber = own;
    toNumber = external;
  } else {
    fromNumber = external;
    toNumber = rng.chance(0.3) ? `sip:${rng.pick(SIP_USERS)}@${profile.sipHost}` : own;
  }

  // Mostly short calls, a long tail, never more than two hours.
  const billDuration = Math.min(7_200, 1 + Math.floor(-Math.log(1 - rng.next()) * 150));
  const ringSeconds = rng.between(0, 25);
  const answerMicros = endMicros - billDuration * MICROS_PER_SECOND;
  const initiationMicros = answerMicros - ringSeconds * MICROS_PER_SECOND;

  // STIR/SHAKEN covers calls from North American numbers only.
  const attested = fromNumber.startsWith('1');
  const attestation = attested ? rng.pickWeighted(ATTESTATIONS) : '';
  const hangup = rng.pickWeighted(HANGUPS);

  return {
    endMicros,
    answerMicros,
    initiationMicros,
    offsetMinutes: rng.pickWeighted(OFFSETS_MINUTES),
    call_direction: direction,
    from_number: fromNumber,
    to_number: toNumber,
    call_duration: billDuration + ringSeconds,
    bill_duration: billDuration,
    billed_duration: roundUpToMinute(billDuration),
    rateUnits: direction === 'outbound' ? destination.outboundRate : INBOUND_RATE_UNITS,
    hangup_cause_code: hangup.code,
    hangup_cause_name: hangup.name,
    hangup_source: hangup.source,
    stir_verification: !attested
      ? 'Not Applicable'
      : attestation === 'A'
        ? 'Verified'
        : 'Not Verified',
    Stir_attestation: attestation,
    voice_network_group: rng.chance(0.9) ? '' : rng.pick(VOICE_NETWORK_GROUPS),
    source_ip:
      direction === 'outbound'
        ? rng.pick(profile.pbxAddresses)
        : `203.0.113.${rng.between(2, 254)}`,
  };
}

/** Identifiers of a call record. */
export interface TrunkCallIds {
  call_uuid: string;
  parent_call_uuid: string | null;
  conference_uuid: string | null;
  /** Per-record request identifier (assumption A19). */
  api_id: string;
}

/** Draws the optional identifiers of a call: mostly none, sometimes a parent or a conference. */
export function generateTrunkCallIds(rng: Rng, callUuid: string): TrunkCallIds {
  return {
    call_uuid: callUuid,
    parent_call_uuid: rng.chance(0.06) ? rng.uuid() : null,
    conference_uuid: rng.chance(0.04) ? rng.uuid() : null,
    api_id: rng.uuid(),
  };
}

/** The wire record of a call. total_amount is exactly total_rate × billed minutes. */
export function formatTrunkCallRecord(
  authId: string,
  facts: TrunkCallFacts,
  ids: TrunkCallIds,
): TrunkCallRecordWire {
  const at = (micros: EpochMicros): string => formatServiceTime(micros, facts.offsetMinutes, false);
  return {
    call_uuid: ids.call_uuid,
    parent_call_uuid: ids.parent_call_uuid,
    conference_uuid: ids.conference_uuid,
    api_id: ids.api_id,
    resource_uri: `/v1/Account/${authId}/Call/${ids.call_uuid}/`,
    call_direction: facts.call_direction,
    call_state: 'ANSWER',
    from_number: facts.from_number,
    to_number: facts.to_number,
    initiation_time: at(facts.initiationMicros),
    answer_time: at(facts.answerMicros),
    end_time: at(facts.endMicros),
    call_duration: facts.call_duration,
    bill_duration: facts.bill_duration,
    billed_duration: facts.billed_duration,
    total_rate: formatDecimalUnits(facts.rateUnits),
    total_amount: formatDecimalUnits((facts.rateUnits * facts.billed_duration) / 60),
    hangup_cause_code: facts.hangup_cause_code,
    hangup_cause_name: facts.hangup_cause_name,
    hangup_source: facts.hangup_source,
    stir_verification: facts.stir_verification,
    Stir_attestation: facts.Stir_attestation,
    voice_network_group: facts.voice_network_group,
    source_ip: facts.source_ip,
  };
}

/**
 * The JSON text of a record formatTrunkCallRecord made: the bytes JSON.stringify(record) writes, put
 * together field by field. Every text of such a record is drawn from ASCII that JSON writes as it
 * is (digits, hex, fixed names, times, amounts, and the account's auth ID, which the simulator's
 * options hold to letters, digits, "_" and "-"), so nothing needs escaping, and it costs a fifth
 * less than JSON.stringify (docs/performance.md, "Pages as JSON text"). Records of any other origin
 * (added, malformed, in the real service's shape) go through JSON.stringify.
 */
export function trunkCallRecordJson(record: TrunkCallRecordWire): string {
  return (
    `{"call_uuid":"${record.call_uuid}","parent_call_uuid":${jsonTextOrNull(record.parent_call_uuid)}` +
    `,"conference_uuid":${jsonTextOrNull(record.conference_uuid)},"api_id":"${record.api_id}"` +
    `,"resource_uri":"${record.resource_uri}","call_direction":"${record.call_direction}"` +
    `,"call_state":"${record.call_state}","from_number":"${record.from_number}"` +
    `,"to_number":"${record.to_number}","initiation_time":"${record.initiation_time}"` +
    `,"answer_time":"${record.answer_time}","end_time":"${record.end_time}"` +
    `,"call_duration":${record.call_duration},"bill_duration":${record.bill_duration}` +
    `,"billed_duration":${record.billed_duration},"total_rate":"${record.total_rate}"` +
    `,"total_amount":"${record.total_amount}","hangup_cause_code":${record.hangup_cause_code}` +
    `,"hangup_cause_name":"${record.hangup_cause_name}","hangup_source":"${record.hangup_source}"` +
    `,"stir_verification":"${record.stir_verification}","Stir_attestation":"${record.Stir_attestation}"` +
    `,"voice_network_group":"${record.voice_network_group}","source_ip":"${record.source_ip}"}`
  );
}

function jsonTextOrNull(text: string | null): string {
  return text === null ? 'null' : `"${text}"`;
}

/** Ways a simulated record can be broken (the malformed-records fault). */
export const MALFORMATIONS = ['bad_end_time', 'bad_amount', 'missing_call_uuid'] as const;
export type Malformation = (typeof MALFORMATIONS)[number];

/**
 * Which malformation, if any, call `index` carries when a share `share` of calls is malformed.
 * Decided by the index's hash, so the same calls are broken on every read.
 */
export function malformationAt(
  key: number,
  index: number,
  share: number,
): Malformation | undefined {
  if (share <= 0) return undefined;
  const hash = hashIndex(key, index);
  if (unitFraction(hash) >= share) return undefined;
  return MALFORMATIONS[hashIndex(key ^ 0x2545f491, index) % MALFORMATIONS.length];
}

/**
 * A copy of a record with the defect: a time that is not a time, an amount that is not a decimal
 * ("abc", or "1e309", which overflows a float), or no call_uuid at all. `variant` picks among forms.
 */
export function malformTrunkCallRecord(
  record: TrunkCallRecordWire,
  malformation: Malformation,
  variant: number,
): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...record };
  switch (malformation) {
    case 'bad_end_time':
      copy.end_time = ['2024-02-30 25:61:00+00:00', 'yesterday', record.end_time.slice(0, 10)][
        variant % 3
      ];
      break;
    case 'bad_amount':
      copy.total_amount = variant % 2 === 0 ? 'abc' : '1e309';
      break;
    case 'missing_call_uuid':
      delete copy.call_uuid;
      break;
  }
  return copy;
}

/** Per-minute rate of streaming, units of 0.00001 ("0.00300"). */
export const STREAM_RATE_UNITS = 300;
/** Share of completed calls that carried streams. */
const STREAM_SHARE = 0.12;

/**
 * The stream records of a completed call (zero, one or two), drawn from `seed`: each runs inside
 * the answered part of the call, and is billed by the minute rounded up.
 */
export function generateCompletedCallStreams(
  seed: number,
  profile: CallProfile,
  authId: string,
  callUuid: string,
  facts: TrunkCallFacts,
): StreamRecordWire[] {
  const rng = new Rng(seed);
  if (!rng.chance(STREAM_SHARE)) return [];
  const count = rng.chance(0.3) ? 2 : 1;
  const answerSeconds = facts.answerMicros / MICROS_PER_SECOND;
  const endSeconds = facts.endMicros / MICROS_PER_SECOND;
  const streams: StreamRecordWire[] = [];
  for (let k = 0; k < count; k++) {
    const startSeconds = Math.min(endSeconds, answerSeconds + rng.between(0, 10));
    const stopSeconds = startSeconds + rng.between(0, endSeconds - startSeconds);
    const duration = stopSeconds - startSeconds;
    const audioTrack = rng.pickWeighted(AUDIO_TRACKS);
    const streamId = rng.uuid();
    const createdMicros = startSeconds * MICROS_PER_SECOND - rng.between(1_000, 900_000);
    streams.push({
      stream_id: streamId,
      call_uuid: callUuid,
      service_auth_id: authId,
      resource_uri: `/v1/Account/${authId}/Call/${callUuid}/Stream/${streamId}/`,
      service_url: `wss://${profile.streamHost}/audio/${rng.hex(12)}`,
      audio_track: audioTrack,
      // Only an inbound stream may talk back (spec 4.5).
      bidirectional: audioTrack === 'inbound' && rng.chance(0.3),
      created_at: formatServiceTime(createdMicros, facts.offsetMinutes, true),
      start_time: formatServiceTime(startSeconds * MICROS_PER_SECOND, facts.offsetMinutes, false),
      end_time: formatServiceTime(stopSeconds * MICROS_PER_SECOND, facts.offsetMinutes, false),
      bill_duration: duration,
      rounded_bill_duration: roundUpToMinute(duration),
      billed_amount: formatDecimalUnits((STREAM_RATE_UNITS * roundUpToMinute(duration)) / 60),
    });
  }
  return streams;
}
