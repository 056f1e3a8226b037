import type {
  SenderPackWire,
  SipEndpointWire,
  StreamRecordWire,
  TrunkCallRecordWire,
  VerifiedCallerIdWire,
} from '../../api/wire-types.js';
import type { EpochMicros } from '../../util/micros.js';
import { createCallTimeline, endMicrosAt, type CallTimeline } from './call-timeline.js';
import { CALLER_IDS_MAX, generateSipEndpoint, generateVerifiedCallerId } from './directory-data.js';
import { generateMessageContent, generateSenderPack, type MessageContent } from './message-data.js';
import {
  deriveKey,
  hashIndex,
  hashText,
  indexedUuid,
  indexOfIndexedUuid,
  INDEXED_UUID_LIMIT,
  Rng,
  unitFraction,
} from './prng.js';
import {
  createCallProfile,
  formatTrunkCallRecord,
  generateCompletedCallStreams,
  generateTrunkCallFacts,
  generateTrunkCallIds,
  malformationAt,
  type CallProfile,
  type Malformation,
  type TrunkCallFacts,
} from './trunk-call-data.js';
import { TRUNK_HISTORY_DAYS } from '../../domain/service-rules.js';

/**
 * One account's simulated data, a pure function of (seed, auth_id, sizes, anchor). Small
 * collections (endpoints, caller IDs, packs) are built once; messages and trunk calls are generated
 * on demand from their index, so their number costs nothing until they are read.
 */

/** How much data each account has. */
export interface DatasetSizes {
  /** Trunk calls ending in the `days` before startup; live traffic continues at the same rate. */
  calls: number;
  days: number;
  endpoints: number;
  callerIds: number;
  messages: number;
  packs: number;
  /** Calls in progress, not in the trunk list, on which streams can be started. */
  liveCalls: number;
}

export const DEFAULT_DATASET_SIZES: Readonly<DatasetSizes> = Object.freeze({
  calls: 20_000,
  days: TRUNK_HISTORY_DAYS,
  endpoints: 45,
  callerIds: 25,
  messages: 2_000,
  packs: 5,
  liveCalls: 5,
});

/** The largest value each size accepts. */
export const DATASET_SIZE_LIMITS: Readonly<DatasetSizes> = Object.freeze({
  calls: 100_000_000,
  days: 365,
  endpoints: 10_000,
  callerIds: CALLER_IDS_MAX,
  messages: 100_000_000,
  packs: 1_000,
  liveCalls: 1_000,
});

/** Every size that is not a whole number within its limits, as messages (empty when all fit). */
export function checkDatasetSizes(sizes: Readonly<DatasetSizes>): string[] {
  const problems: string[] = [];
  for (const [name, limit] of Object.entries(DATASET_SIZE_LIMITS) as [
    keyof DatasetSizes,
    number,
  ][]) {
    const value = sizes[name];
    const min = name === 'days' ? 1 : 0;
    if (!Number.isSafeInteger(value) || value < min || value > limit) {
      problems.push(`${name} must be a whole number from ${min} to ${limit} (got ${value})`);
    }
  }
  return problems;
}

/** Hash keys of one account: one per kind of thing drawn, so kinds never share randomness. */
interface AccountKeys {
  readonly timeline: number;
  readonly call: number;
  readonly callUuid: number;
  readonly callIds: number;
  readonly late: number;
  readonly malformed: number;
  readonly streams: number;
  readonly overlay: number;
  readonly endpoint: number;
  readonly callerId: number;
  readonly message: number;
  readonly messageUuid: number;
  readonly pack: number;
  readonly live: number;
  readonly profile: number;
}

function createAccountKeys(seed: string, authId: string): AccountKeys {
  const base = hashText(`${seed}\u0000${authId}`);
  const key = (purpose: string): number => deriveKey(base, purpose);
  return {
    timeline: key('timeline'),
    call: key('call'),
    callUuid: key('call-uuid'),
    callIds: key('call-ids'),
    late: key('late'),
    malformed: key('malformed'),
    streams: key('streams'),
    overlay: key('overlay'),
    endpoint: key('endpoint'),
    callerId: key('caller-id'),
    message: key('message'),
    messageUuid: key('message-uuid'),
    pack: key('pack'),
    live: key('live'),
    profile: key('profile'),
  };
}

export interface AccountDatasetOptions {
  seed: string;
  authId: string;
  sizes: Readonly<DatasetSizes>;
  /** The clock at startup. */
  anchorMicros: EpochMicros;
  /** Told how many trunk call records were generated (the simulator's "records generated"). */
  onRecordsGenerated?: (count: number) => void;
}

/** A simulated call that was added to the data at run time (admin, or the paging fault). */
export interface GeneratedCall {
  readonly facts: TrunkCallFacts;
  readonly record: TrunkCallRecordWire;
}

/** One account's data. Builds nothing big; every trunk call and message is made when read. */
export class AccountDataset {
  readonly authId: string;
  readonly sizes: Readonly<DatasetSizes>;
  readonly timeline: CallTimeline;
  readonly anchorMicros: EpochMicros;
  readonly profile: CallProfile;
  /** Sub-account references of the account (sub_account of endpoints, subaccount of caller IDs). */
  readonly subAccounts: readonly string[];
  readonly campaignId: string;
  private readonly keys: AccountKeys;
  private readonly countRecords: (count: number) => void;
  private readonly packList: readonly Omit<SenderPackWire, 'api_id'>[];
  private readonly packUuids: readonly string[];

  constructor(options: AccountDatasetOptions) {
    this.authId = options.authId;
    this.sizes = options.sizes;
    this.anchorMicros = options.anchorMicros;
    this.keys = createAccountKeys(options.seed, options.authId);
    this.countRecords = options.onRecordsGenerated ?? (() => undefined);
    this.timeline = createCallTimeline({
      anchorMicros: options.anchorMicros,
      days: options.sizes.days,
      calls: options.sizes.calls,
      jitterKey: this.keys.timeline,
    });
    const rng = new Rng(this.keys.profile);
    this.profile = createCallProfile(rng);
    this.subAccounts = [`SA${rng.alphanumeric(18)}`, `SA${rng.alphanumeric(18)}`];
    this.campaignId = `C${rng.alphanumeric(6)}`;
    const packs: Omit<SenderPackWire, 'api_id'>[] = [];
    for (let k = 0; k < options.sizes.packs; k++) {
      packs.push(
        generateSenderPack(
          new Rng(hashIndex(this.keys.pack, k)),
          this.authId,
          k,
          this.anchorMicros,
        ),
      );
    }
    this.packList = packs;
    this.packUuids = packs.map((pack) => pack.uuid);
  }

  // ---- trunk calls -------------------------------------------------------------------------

  /** When call `index` ends, epoch microseconds (whole seconds). */
  callEndMicros(index: number): EpochMicros {
    return endMicrosAt(this.timeline, index);
  }

  /**
   * The content of call `index`; counts as one generated record unless `counted` is false (for
   * the admin's own look-ups, which must not disturb what tests measure).
   */
  callFactsAt(index: number, counted = true): TrunkCallFacts {
    if (counted) this.countRecords(1);
    return generateTrunkCallFacts(
      this.profile,
      new Rng(hashIndex(this.keys.call, index)),
      this.callEndMicros(index),
    );
  }

  /** The call_uuid of call `index`. */
  callUuidAt(index: number): string {
    return indexedUuid(this.keys.callUuid, index);
  }

  /** The index of the generated call with this call_uuid, or undefined when none has it. */
  callIndexOf(callUuid: string): number | undefined {
    return indexOfIndexedUuid(this.keys.callUuid, callUuid);
  }

  /** The wire record of call `index`, from its facts (pass them when already generated). */
  callRecordAt(
    index: number,
    facts: TrunkCallFacts = this.callFactsAt(index),
  ): TrunkCallRecordWire {
    const callUuid = this.callUuidAt(index);
    const ids = generateTrunkCallIds(new Rng(hashIndex(this.keys.callIds, index)), callUuid);
    return formatTrunkCallRecord(this.authId, facts, ids);
  }

  /** Whether call `index` is one of the late-arriving share `share` (stable per call). */
  isLateCall(index: number, share: number): boolean {
    return share > 0 && unitFraction(hashIndex(this.keys.late, index)) < share;
  }

  /** The malformation call `index` carries when a share `share` of records is malformed. */
  malformationAt(index: number, share: number): Malformation | undefined {
    return malformationAt(this.keys.malformed, index, share);
  }

  /** A number that picks among the forms of a malformation, stable per call. */
  malformationVariant(index: number): number {
    return hashIndex(this.keys.malformed ^ 0x68e31da4, index);
  }

  /** The stream records of completed call `index` (often none). */
  streamsOfCall(index: number, facts: TrunkCallFacts): StreamRecordWire[] {
    return generateCompletedCallStreams(
      hashIndex(this.keys.streams, index),
      this.profile,
      this.authId,
      this.callUuidAt(index),
      facts,
    );
  }

  /** The `sequence`-th call added at run time, ending at `endMicros` (whole seconds). */
  addedCall(sequence: number, endMicros: EpochMicros): GeneratedCall {
    const rng = new Rng(hashIndex(this.keys.overlay, sequence));
    const facts = generateTrunkCallFacts(this.profile, rng, endMicros);
    const ids = generateTrunkCallIds(rng, rng.uuid());
    return { facts, record: formatTrunkCallRecord(this.authId, facts, ids) };
  }

  // ---- live calls --------------------------------------------------------------------------

  /** UUIDs of the calls in progress: streams can be started on these only. */
  liveCallUuids(): string[] {
    const rng = new Rng(this.keys.live);
    const out: string[] = [];
    for (let k = 0; k < this.sizes.liveCalls; k++) out.push(rng.uuid());
    return out;
  }

  // ---- endpoints, caller IDs, packs, messages -------------------------------------------------

  /** The account's endpoints at startup, in endpoint_id order. */
  initialEndpoints(): SipEndpointWire[] {
    const out: SipEndpointWire[] = [];
    for (let k = 0; k < this.sizes.endpoints; k++) out.push(this.endpointAt(k));
    return out;
  }

  /** Endpoint number `k` (startup endpoints are 0 … endpoints − 1; later ones continue). */
  endpointAt(k: number, registered?: boolean): SipEndpointWire {
    const rng = new Rng(hashIndex(this.keys.endpoint, k));
    // Increasing numeric ids with a random-looking tail.
    const endpointId = String(
      10_000_000_000_000 +
        (this.keys.endpoint % 1_000_000) * 1_000_000 +
        k * 1_000 +
        rng.below(1_000),
    );
    return generateSipEndpoint(rng, {
      authId: this.authId,
      endpointId,
      nowMicros: this.anchorMicros,
      subAccounts: this.subAccounts,
      ...(registered === undefined ? {} : { registered }),
    });
  }

  /** The account's verified caller IDs, in a fixed order. */
  callerIds(): VerifiedCallerIdWire[] {
    const out: VerifiedCallerIdWire[] = [];
    for (let k = 0; k < this.sizes.callerIds; k++) {
      out.push(
        generateVerifiedCallerId(new Rng(hashIndex(this.keys.callerId, k)), {
          authId: this.authId,
          index: k,
          nowMicros: this.anchorMicros,
          subAccounts: this.subAccounts,
        }),
      );
    }
    return out;
  }

  /** The account's sender packs, without api_id. */
  packs(): readonly Omit<SenderPackWire, 'api_id'>[] {
    return this.packList;
  }

  /** The UUID of message `k`. */
  messageUuidAt(k: number): string {
    return indexedUuid(this.keys.messageUuid, k);
  }

  /** The message with this UUID, or undefined when the account has none. */
  messageByUuid(messageUuid: string): MessageContent | undefined {
    const index = indexOfIndexedUuid(this.keys.messageUuid, messageUuid);
    if (index === undefined || index >= this.sizes.messages) return undefined;
    return this.messageAt(index);
  }

  /** Message `k` (0 ≤ k < messages). */
  messageAt(k: number): MessageContent {
    return generateMessageContent(new Rng(hashIndex(this.keys.message, k)), {
      authId: this.authId,
      messageUuid: this.messageUuidAt(k),
      nowMicros: this.anchorMicros,
      packUuids: this.packUuids,
      ownNumbers: this.profile.ownNumbers,
      campaignId: this.campaignId,
      requesterIps: this.profile.pbxAddresses,
    });
  }
}

/** Calls whose index is at least this cannot be found again by call_uuid (see indexedUuid). */
export const CALL_INDEX_LIMIT = INDEXED_UUID_LIMIT;
