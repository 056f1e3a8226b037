import type { SipEndpointWire, VerifiedCallerIdWire } from '../../api/wire-types.js';
import {
  formatFilterMicros,
  formatIsoMicros,
  MICROS_PER_DAY,
  MICROS_PER_SECOND,
  type EpochMicros,
} from '../../util/micros.js';
import type { Rng } from './prng.js';

/**
 * Simulated SIP endpoints (2.1) and verified caller IDs (2.2): small collections, each item drawn
 * from its own generator. Pure.
 */

/** The SIP domain of simulated endpoints ({sip_domain} of the spec). */
export const SIMULATOR_SIP_DOMAIN = 'phone.simulator.telesync.test';

const FIRST_NAMES = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan'];
const DEVICES = ['desk phone', 'softphone', 'mobile', 'conference room', 'reception'];
const USER_AGENTS = [
  'Linphone-Desktop/5.2.4 (belle-sip/5.2.0)',
  'Zoiper rv2.10.19.6',
  'Yealink SIP-T54W 96.86.0.70',
  'Grandstream GXP2170 1.0.11.23',
  'MicroSIP/3.21.3',
];

/** What an endpoint is drawn from. */
export interface EndpointSeed {
  authId: string;
  endpointId: string;
  /** Registrations expire a little after this instant. */
  nowMicros: EpochMicros;
  /** Sub-account references the account has. */
  subAccounts: readonly string[];
  /** Force registered or not; drawn when undefined. */
  registered?: boolean;
}

/**
 * One SIP endpoint. An unregistered endpoint has no sip_contact, sip_expires or sip_user_agent key
 * at all (spec 2.1: omitted, not null).
 */
export function generateSipEndpoint(rng: Rng, seed: EndpointSeed): SipEndpointWire {
  const name = rng.pick(FIRST_NAMES);
  const username = `${name}${rng.digits(6)}`;
  const registered = seed.registered ?? rng.chance(0.6);
  const contactHost = `192.0.2.${rng.between(2, 254)}:${rng.pick([5060, 5061, 5080])}`;
  const expiresMicros =
    Math.floor(seed.nowMicros / MICROS_PER_SECOND + rng.between(60, 3_600)) * MICROS_PER_SECOND;
  const userAgent = rng.pick(USER_AGENTS);
  const subAccount =
    seed.subAccounts.length > 0 && rng.chance(0.15) ? rng.pick(seed.subAccounts) : null;
  return {
    endpoint_id: seed.endpointId,
    username,
    alias: `${name[0]?.toUpperCase() ?? ''}${name.slice(1)} ${rng.pick(DEVICES)}`,
    application: `/v1/Account/${seed.authId}/Application/${rng.between(1, 9)}${rng.digits(16)}/`,
    resource_uri: `/v1/Account/${seed.authId}/Endpoint/${seed.endpointId}/`,
    sip_uri: `sip:${username}@${SIMULATOR_SIP_DOMAIN}`,
    sip_registered: registered ? 'true' : 'false',
    ...(registered
      ? {
          sip_contact: `sip:${username}@${contactHost};transport=udp`,
          // YYYY-MM-DD HH:MM:SS with no offset (UTC, assumption A18): whole seconds, no fraction.
          sip_expires: formatFilterMicros(expiresMicros),
          sip_user_agent: userAgent,
        }
      : {}),
    sub_account: subAccount,
  };
}

/** Countries of verified numbers: E.164 prefix of fictitious ranges, then 5 digits of the index. */
const CALLER_ID_COUNTRIES: readonly (readonly [
  { iso: string; prefix: (rng: Rng) => string },
  number,
])[] = [
  [{ iso: 'US', prefix: (rng) => `1${rng.pick(['415', '212', '312', '646'])}55` }, 50],
  [{ iso: 'CA', prefix: (rng) => `1${rng.pick(['416', '604', '514'])}55` }, 15],
  [{ iso: 'GB', prefix: () => '4477009' }, 15],
  [{ iso: 'IN', prefix: () => '9198000' }, 10],
  [{ iso: 'AU', prefix: () => '614915' }, 10],
];
const ALIAS_WORDS = [
  'Support',
  'Sales',
  'Billing',
  'Main line',
  'Dispatch',
  'Front desk',
  'Alerts',
];
const CITIES = ['Austin', 'Toronto', 'London', 'Pune', 'Sydney', 'Denver', 'Boston'];

/** Caller IDs an account can have: the index is written into the number, which keeps it unique. */
export const CALLER_IDS_MAX = 100_000;

/** What a caller ID is drawn from. */
export interface CallerIdSeed {
  authId: string;
  /** Position in the account's list, below CALLER_IDS_MAX; part of the number. */
  index: number;
  /** Creation and modification times lie before this instant. */
  nowMicros: EpochMicros;
  subAccounts: readonly string[];
}

/** One verified caller ID; created_at ≤ modified_at, both ISO UTC with microseconds. */
export function generateVerifiedCallerId(rng: Rng, seed: CallerIdSeed): VerifiedCallerIdWire {
  const country = rng.pickWeighted(CALLER_ID_COUNTRIES);
  const digits = `${country.prefix(rng)}${String(seed.index).padStart(5, '0')}`;
  const createdMicros = withFraction(
    seed.nowMicros - rng.between(31, 400) * MICROS_PER_DAY - rng.between(0, MICROS_PER_DAY - 1),
  );
  const modifiedMicros = withFraction(
    createdMicros + rng.between(0, 30) * MICROS_PER_DAY + rng.between(0, MICROS_PER_DAY - 1),
  );
  return {
    alias: `${rng.pick(ALIAS_WORDS)} ${rng.pick(CITIES)}`,
    country: country.iso,
    created_at: formatIsoMicros(createdMicros),
    modified_at: formatIsoMicros(modifiedMicros),
    phone_number: `+${digits}`,
    resource_uri: `/v1/Account/${seed.authId}/VerifiedCallerId/${digits}`,
    subaccount: seed.subAccounts.length > 0 && rng.chance(0.2) ? rng.pick(seed.subAccounts) : '',
    verification_uuid: rng.uuid(),
  };
}

/**
 * The instant, moved by a microsecond when it falls on a whole second: the service always writes
 * six fraction digits in these fields, and formatIsoMicros drops a zero fraction.
 */
export function withFraction(micros: EpochMicros): EpochMicros {
  return micros % MICROS_PER_SECOND === 0 ? micros + 1 : micros;
}
