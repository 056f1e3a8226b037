import {
  formatIsoMicros,
  MICROS_PER_DAY,
  MICROS_PER_SECOND,
  type EpochMicros,
} from '../../util/micros.js';
import { firstIndexEndingAtOrAfter } from '../data/call-timeline.js';
import type { DatasetSizes } from '../data/dataset.js';
import {
  isGeneratedCallVisible,
  selectTrunkCalls,
  type GeneratedCalls,
  type LateArrivals,
} from '../data/trunk-call-index.js';
import { TRUNK_DEFAULT_WINDOW_DAYS, TRUNK_HISTORY_DAYS } from '../../domain/service-rules.js';
import type { AccountState } from './account-state.js';
import type { SimulatorState } from './simulator-state.js';

/** Per-account facts for scripts, tests and the `simulate` command. */
export interface AccountSummary {
  authId: string;
  endpoints: number;
  callerIds: number;
  messages: number;
  packs: number;
  liveCalls: number;
  /** Completed, visible calls of the last 90 days (what a full backfill finds). */
  callsLast90Days: number;
  /** The same for the last 7 days (the trunk list's default window). */
  callsLast7Days: number;
  /** Calls added at run time (admin, paging fault). */
  addedCalls: number;
  exampleMessageUuids: string[];
  packUuids: string[];
  liveCallUuids: string[];
  /** Recent completed calls that carry stream records. */
  callsWithStreams: string[];
}

export interface DatasetSummary {
  seed: string;
  sizes: DatasetSizes;
  /** The clock at startup and now, ISO UTC. */
  anchor: string;
  now: string;
  accounts: AccountSummary[];
}

/**
 * Facts about a simulator's data, for scripts and tests (GET /__admin/dataset). Reading them
 * generates no counted records and draws nothing, so asking changes no later answer.
 */
export function summarizeDataset(state: SimulatorState): DatasetSummary {
  const now = state.now();
  const faults = state.activeFaults;
  const late = { share: faults.late, delayMicros: faults.lateSeconds * MICROS_PER_SECOND };
  const count = (account: AccountState, days: number): number =>
    selectTrunkCalls(
      uncountedCalls(account),
      account.overlay.list(),
      {
        lowerMicros: now - days * MICROS_PER_DAY,
        upperMicros: now,
        filters: {},
        limit: 0,
        offset: 0,
      },
      now,
      late,
    ).totalCount;
  const { sizes } = state;
  return {
    seed: state.seed,
    sizes: { ...sizes },
    anchor: formatIsoMicros(state.anchorMicros),
    now: formatIsoMicros(now),
    accounts: [...state.accounts.values()].map((account) => ({
      authId: account.authId,
      endpoints: account.endpoints.length,
      callerIds: account.callerIds.length,
      messages: sizes.messages,
      packs: sizes.packs,
      liveCalls: sizes.liveCalls,
      callsLast90Days: count(account, TRUNK_HISTORY_DAYS),
      callsLast7Days: count(account, TRUNK_DEFAULT_WINDOW_DAYS),
      addedCalls: account.overlay.list().length,
      exampleMessageUuids: Array.from({ length: Math.min(5, sizes.messages) }, (_, k) =>
        account.dataset.messageUuidAt(k),
      ),
      packUuids: account.dataset.packs().map((pack) => pack.uuid),
      liveCallUuids: account.dataset.liveCallUuids(),
      callsWithStreams: findCallsWithStreams(account, now, late, 3),
    })),
  };
}

/** The account's generated calls, read without counting them as generated records. */
function uncountedCalls(account: AccountState): GeneratedCalls {
  return {
    timeline: account.dataset.timeline,
    callFactsAt: (index) => account.dataset.callFactsAt(index, false),
    isLateCall: (index, share) => account.dataset.isLateCall(index, share),
  };
}

/** Up to `wanted` of the latest visible completed calls that carry streams (of 5,000 at most). */
function findCallsWithStreams(
  account: AccountState,
  now: EpochMicros,
  late: LateArrivals,
  wanted: number,
): string[] {
  const { dataset } = account;
  const calls = uncountedCalls(account);
  const found: string[] = [];
  let index = firstIndexEndingAtOrAfter(dataset.timeline, now + 1) - 1;
  for (let looked = 0; index >= 0 && looked < 5_000 && found.length < wanted; looked++, index--) {
    if (!isGeneratedCallVisible(calls, index, now, late)) continue;
    const facts = dataset.callFactsAt(index, false);
    if (dataset.streamsOfCall(index, facts).length > 0) found.push(dataset.callUuidAt(index));
  }
  return found;
}
