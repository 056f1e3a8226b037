import { CALL_DIRECTIONS, STIR_VERIFICATIONS } from '../../api/trunk-call-query.js';
import type { SipEndpointWire, VerifiedCallerIdWire } from '../../api/wire-types.js';
import { MICROS_PER_SECOND, type EpochMicros } from '../../util/micros.js';
import { AccountDataset, type DatasetSizes } from '../data/dataset.js';
import { RenderedCallRecords } from '../data/rendered-call-records.js';
import { LiveStreamRegistry } from './live-streams.js';
import { deriveKey, hashText } from '../data/prng.js';
import type { TrunkCallFilterView } from '../data/trunk-call-data.js';
import { TrunkCallOverlay, TrunkScanCache, type AddedCall } from '../data/trunk-call-index.js';

/**
 * Everything the simulator knows about one account: its credentials, its generated data, and what
 * changed at run time (added calls and endpoints, started streams).
 */

/** Credentials of a simulated account. */
export interface SimulatorAccount {
  readonly authId: string;
  readonly authToken: string;
}

export interface AccountState {
  readonly authId: string;
  readonly authToken: string;
  readonly dataset: AccountDataset;
  /** The calls before startup as JSON bytes, when the simulator was started with `prerender`. */
  readonly renderedCalls: RenderedCallRecords | undefined;
  readonly overlay: TrunkCallOverlay;
  /** Filtered trunk-list scans, kept between the pages of one query. */
  readonly scanCache: TrunkScanCache;
  readonly streams: LiveStreamRegistry;
  /** Current endpoints, in list order (admin may add and remove). */
  readonly endpoints: SipEndpointWire[];
  /** Number of the next endpoint the admin adds (continues the generated ones). */
  nextEndpointNumber: number;
  readonly callerIds: readonly VerifiedCallerIdWire[];
}

export interface AccountStateOptions {
  account: SimulatorAccount;
  seed: string;
  sizes: Readonly<DatasetSizes>;
  anchorMicros: EpochMicros;
  onRecordsGenerated: (count: number) => void;
  /** Render the calls before startup once, as JSON bytes (SimulatorOptions.prerender). */
  prerender?: boolean;
}

/**
 * Builds an account's state from its options. Cheap at any size, unless `prerender` asks for every
 * call's JSON at once (about 7 µs and 0.9 KB a call).
 */
export function createAccountState(options: AccountStateOptions): AccountState {
  const dataset = new AccountDataset({
    seed: options.seed,
    authId: options.account.authId,
    sizes: options.sizes,
    anchorMicros: options.anchorMicros,
    onRecordsGenerated: options.onRecordsGenerated,
  });
  return {
    authId: options.account.authId,
    authToken: options.account.authToken,
    dataset,
    renderedCalls:
      options.prerender === true
        ? RenderedCallRecords.render(dataset, options.sizes.calls)
        : undefined,
    overlay: new TrunkCallOverlay(),
    scanCache: new TrunkScanCache(),
    streams: new LiveStreamRegistry(
      options.account.authId,
      dataset.liveCallUuids(),
      deriveKey(hashText(`${options.seed}\u0000${options.account.authId}`), 'live-streams'),
    ),
    endpoints: dataset.initialEndpoints(),
    nextEndpointNumber: options.sizes.endpoints,
    callerIds: dataset.callerIds(),
  };
}

/** A call to add to an account's trunk list. */
export interface NewCall {
  /** When it ended; kept to whole seconds, as trunk times carry no fraction. */
  endMicros: EpochMicros;
  /** Not listed before this instant (default: at once). */
  visibleFromMicros?: EpochMicros;
  /** Field values replacing the generated ones (any JSON value; end_time is set by endMicros). */
  overrides?: Readonly<Record<string, unknown>>;
  /** Fields to leave out of the record (to serve a record without, say, call_uuid). */
  omit?: readonly string[];
}

/** Types the filterable fields must keep, so filters still apply to an overridden record. */
const VIEW_FIELD_RULES: Readonly<Record<keyof TrunkCallFilterView, (value: unknown) => boolean>> = {
  from_number: (value) => typeof value === 'string',
  to_number: (value) => typeof value === 'string',
  call_direction: (value) => (CALL_DIRECTIONS as readonly unknown[]).includes(value),
  bill_duration: (value) => Number.isSafeInteger(value),
  hangup_cause_code: (value) => Number.isSafeInteger(value),
  hangup_source: (value) => typeof value === 'string',
  stir_verification: (value) => (STIR_VERIFICATIONS as readonly unknown[]).includes(value),
};

/** Why a new call cannot be added, as messages (empty when it can). */
export function checkNewCall(call: NewCall): string[] {
  const problems: string[] = [];
  if (!Number.isSafeInteger(call.endMicros)) problems.push('end_time must be a date-time');
  for (const [key, value] of Object.entries(call.overrides ?? {})) {
    if (key === 'end_time')
      problems.push('end_time is set by the end_time field, not by overrides');
    const rule = VIEW_FIELD_RULES[key as keyof TrunkCallFilterView] as
      ((value: unknown) => boolean) | undefined;
    if (rule !== undefined && !rule(value)) {
      problems.push(
        `overrides.${key} must keep the wire type of ${key} (got ${JSON.stringify(value)})`,
      );
    }
  }
  return problems;
}

/**
 * Adds a call to an account's trunk list (the caller has run checkNewCall). Returns the call as
 * stored; it is listed, in order, by every query whose range and filters it matches.
 */
export function addCall(state: AccountState, call: NewCall, nowMicros: EpochMicros): AddedCall {
  const endMicros = Math.floor(call.endMicros / MICROS_PER_SECOND) * MICROS_PER_SECOND;
  const sequence = state.overlay.nextSequence;
  const generated = state.dataset.addedCall(sequence, endMicros);
  const record: Record<string, unknown> = { ...generated.record, ...(call.overrides ?? {}) };
  for (const key of call.omit ?? []) delete record[key];
  const view = { ...generated.facts } as Record<string, unknown>;
  for (const key of Object.keys(VIEW_FIELD_RULES)) if (key in record) view[key] = record[key];
  const added: AddedCall = {
    sequence,
    endMicros,
    visibleFromMicros: call.visibleFromMicros ?? nowMicros,
    callUuid: typeof record.call_uuid === 'string' ? record.call_uuid : undefined,
    record,
    view: view as unknown as TrunkCallFilterView,
  };
  state.overlay.add(added);
  return added;
}

/** Adds an endpoint (registered or not, drawn when not said), with field overrides. */
export function addEndpoint(
  state: AccountState,
  registered: boolean | undefined,
  overrides: Readonly<Record<string, unknown>> = {},
): SipEndpointWire {
  const endpoint = {
    ...state.dataset.endpointAt(state.nextEndpointNumber, registered),
    ...overrides,
  };
  state.nextEndpointNumber++;
  state.endpoints.push(endpoint);
  return endpoint;
}

/** Removes an endpoint; false when the account has none with that id. */
export function removeEndpoint(state: AccountState, endpointId: string): boolean {
  const at = state.endpoints.findIndex((endpoint) => endpoint.endpoint_id === endpointId);
  if (at < 0) return false;
  state.endpoints.splice(at, 1);
  return true;
}
