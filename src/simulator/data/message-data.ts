import type {
  MessageDetailRecordWire,
  NumberPriorityWire,
  NumberType,
  SenderPackWire,
} from '../../api/wire-types.js';
import {
  formatIsoMicros,
  formatServiceTime,
  MICROS_PER_DAY,
  MICROS_PER_HOUR,
  MICROS_PER_SECOND,
  type EpochMicros,
} from '../../util/micros.js';
import { formatDecimalUnits } from './decimal-text.js';
import { withFraction } from './directory-data.js';
import type { Rng } from './prng.js';

/** Simulated message detail records (2.3) and sender packs (2.4). Pure. */

const PACK_NAMES = ['Marketing pool', 'Alerts', 'OTP senders', 'Support', 'Notifications'];
const NUMBER_TYPES: readonly NumberType[] = ['shortcode', 'tollfree', 'longcode'];

/** One sender pack, without the request's api_id. Each priority entry is a permutation. */
export function generateSenderPack(
  rng: Rng,
  authId: string,
  index: number,
  nowMicros: EpochMicros,
): Omit<SenderPackWire, 'api_id'> {
  const uuid = rng.uuid();
  const hasApplication = rng.chance(0.5);
  const createdMicros = withFraction(
    nowMicros - rng.between(10, 700) * MICROS_PER_DAY - rng.between(0, MICROS_PER_DAY - 1),
  );
  const numberPriority: NumberPriorityWire[] = [];
  for (const country of ['US', 'CA']) {
    for (const service of ['SMS', 'MMS']) {
      const [priority1, priority2, priority3] = shuffled(rng, NUMBER_TYPES) as [
        NumberType,
        NumberType,
        NumberType,
      ];
      numberPriority.push({
        country_iso: country,
        service_type: service,
        priority: { priority1, priority2, priority3 },
      });
    }
  }
  return {
    uuid,
    name: `${PACK_NAMES[index % PACK_NAMES.length] ?? 'Pack'} ${index + 1}`,
    application_id: hasApplication ? `${rng.between(1, 9)}${rng.digits(16)}` : '',
    application_type: hasApplication ? rng.pick(['XML', 'PHLO']) : '',
    created_on: formatIsoMicros(createdMicros),
    local_connect: rng.chance(0.5),
    sticky_sender: rng.chance(0.5),
    number_pool: `/v1/Account/${authId}/NumberPool/${rng.uuid()}/`,
    number_priority: numberPriority,
  };
}

function shuffled<T>(rng: Rng, items: readonly T[]): T[] {
  const out = [...items];
  for (let k = out.length - 1; k > 0; k--) {
    const j = rng.below(k + 1);
    [out[k], out[j]] = [out[j] as T, out[k] as T];
  }
  return out;
}

/** A message record without its two request-dependent parts: api_id and the twin is_domestic. */
export type MessageContent = Omit<MessageDetailRecordWire, 'is_domestic' | 'api_id'> & {
  /** Written twice on the wire, as text and as a boolean (spec 2.3). */
  readonly isDomestic: boolean;
};

const NETWORKS: Readonly<Record<string, readonly (readonly [string, string, string])[]>> = {
  US: [
    ['AT&T Wireless', '310', '410'],
    ['T-Mobile USA', '310', '260'],
    ['Verizon Wireless', '311', '480'],
  ],
  CA: [
    ['Rogers Wireless', '302', '720'],
    ['Bell Mobility', '302', '610'],
  ],
};
/** Per-unit prices by destination, units of 0.00001: [rate, carrier fee]. */
const MESSAGE_PRICES: Readonly<Record<string, readonly [number, number]>> = {
  US: [500, 300],
  CA: [2_000, 0],
};
const OFFSETS_MINUTES = [0, 330, -240, -420, 60, 540, 345];

/** What a message is drawn from. */
export interface MessageSeed {
  authId: string;
  messageUuid: string;
  /** Messages were sent in the 30 days before this instant. */
  nowMicros: EpochMicros;
  /** Packs a message may have used; empty: powerpack_id is "". */
  packUuids: readonly string[];
  /** Numbers the account sends from, digits. */
  ownNumbers: readonly string[];
  /** The account's 10DLC campaign. */
  campaignId: string;
  requesterIps: readonly string[];
}

/** Units (segments) of a message and their weights. */
const MESSAGE_UNITS: readonly (readonly [number, number])[] = [
  [1, 80],
  [2, 15],
  [3, 5],
];

const AREA_CODES: Readonly<Record<'US' | 'CA', readonly string[]>> = {
  US: ['415', '212', '646', '305'],
  CA: ['416', '604'],
};

/**
 * One delivered outbound SMS. Amounts are exact: total_amount = total_rate × units and
 * carrier_fees = carrier_fees_rate × units. is_domestic is true for a US destination.
 */
export function generateMessageContent(rng: Rng, seed: MessageSeed): MessageContent {
  const country = rng.chance(0.85) ? 'US' : 'CA';
  const [network, mcc, mnc] = rng.pick(NETWORKS[country] ?? []);
  const [rateUnits, feeUnits] = MESSAGE_PRICES[country] ?? [0, 0];
  const units = rng.pickWeighted(MESSAGE_UNITS);
  const sentMicros =
    seed.nowMicros - rng.between(60, 30 * 86_400) * MICROS_PER_SECOND - rng.between(0, 999_999);
  const offset = rng.pick(OFFSETS_MINUTES);
  const areaCode = rng.pick(AREA_CODES[country]);
  const sender = rng.pick(seed.ownNumbers);
  return {
    message_uuid: seed.messageUuid,
    resource_uri: `/v1/Account/${seed.authId}/Message/${seed.messageUuid}/`,
    message_direction: 'outbound',
    message_state: 'delivered',
    message_type: 'sms',
    message_time: formatServiceTime(sentMicros, offset, true),
    from_number: sender,
    to_number: `1${areaCode}${rng.between(2, 9)}${rng.digits(6)}`,
    replaced_sender: rng.chance(0.3) ? rng.pick(seed.ownNumbers) : '',
    destination_country_iso2: country,
    destination_network: network,
    mcc,
    mnc,
    units,
    total_rate: formatDecimalUnits(rateUnits),
    total_amount: formatDecimalUnits(rateUnits * units),
    carrier_fees_rate: formatDecimalUnits(feeUnits),
    carrier_fees: formatDecimalUnits(feeUnits * units),
    error_code: '000',
    isDomestic: country === 'US',
    powerpack_id: seed.packUuids.length > 0 ? rng.pick(seed.packUuids) : '',
    tendlc_campaign_id: seed.campaignId,
    tendlc_registration_status: 'registered',
    dlt_entity_id: '',
    dlt_template_id: '',
    dlt_template_category: '',
    requester_ip: rng.pick(seed.requesterIps),
    conversation_id: rng.hex(32),
    conversation_origin: rng.chance(0.8) ? 'authentication' : 'utility',
    conversation_expiration_timestamp: formatServiceTime(
      sentMicros + 24 * MICROS_PER_HOUR,
      offset,
      false,
    ),
    log: 'number_only',
  };
}

/**
 * The JSON text of a message response. It carries `is_domestic` twice, as the spec's sample does:
 * as text in the record's place (after error_code) and as a boolean at the end. A JS object cannot
 * hold a key twice, so the text is written here key by key.
 */
export function writeMessageJson(content: MessageContent, apiId: string): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(content)) {
    if (key === 'isDomestic') continue;
    parts.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`);
    if (key === 'error_code')
      parts.push(`"is_domestic":${JSON.stringify(String(content.isDomestic))}`);
  }
  parts.push(`"api_id":${JSON.stringify(apiId)}`);
  parts.push(`"is_domestic":${JSON.stringify(content.isDomestic)}`);
  return `{${parts.join(',')}}`;
}
