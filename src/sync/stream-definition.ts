import type { Kysely } from 'kysely';
import type { Database } from '../db/connect.js';
import type { LoadRow } from '../db/data-loader.js';
import type { LookupQueue } from '../db/repositories/lookup-queue-repository.js';
import type { WindowChange } from '../db/repositories/sync-windows-repository.js';
import type { Tables } from '../db/schema.js';
import type { DataTableSpec } from '../db/table-specs.js';
import type { IncrementalPass, LedgerStatus, SlotWindow } from '../domain/ledger-entry.js';
import type { StreamName } from '../domain/streams.js';
import type { BatchLoader, LoadBatching } from '../load/batch-loader.js';
import type { Normalizer } from '../normalize/normalize-records.js';
import type { EpochMicros } from '../util/micros.js';
import type { RunContext } from './run-context.js';
import type { RunPreview } from './run-preview.js';
import type { SyncSettings } from './sync-settings.js';
import type { BackfillPlan, TimeWindow } from './window-planner.js';

/** What a run reads: the stream's next increment, or (trunk calls) a backfill of a range. */
export type RunMode =
  { readonly kind: 'sync' } | { readonly kind: 'backfill'; readonly window: TimeWindow };

/**
 * How a stream keeps what it has read between runs: a ledger of time windows, the time of its last
 * complete snapshot, or a lookup queue. `status` and `state show`/`state reset` read it.
 */
export type StreamStateKind =
  | { readonly kind: 'windows' }
  | { readonly kind: 'snapshot' }
  | { readonly kind: 'queue'; readonly queue: LookupQueue };

/**
 * What a plan's units move the stream's watermark to when they complete: the time of the
 * transaction that completes one (a snapshot: the time of the last complete list), or what the
 * window ledger justifies for an incremental pass (watermarkFromLedger). The runner writes it.
 */
export type WatermarkRule =
  { readonly kind: 'commit-time' } | { readonly kind: 'ledger'; readonly pass: IncrementalPass };

/**
 * What a unit's own commit writes besides its rows and the watermark (deletion marks), in the same
 * transaction, before the watermark; resolving to false leaves the watermark where it is.
 */
export type UnitCommitHook = (trx: Kysely<Tables>, syncedAt: string) => Promise<boolean | void>;

/**
 * How a unit commits, given by the runner: the unit says what completes, the runner writes the
 * ledger and the watermark in the transaction of the unit's last rows and counts the unit then.
 */
export interface UnitCommit {
  /**
   * Commits the unit: its last rows, its rejects, `hook` and the plan's watermark, in one
   * transaction; resolves once committed (throws the loader's failure). Completes `units` units
   * (default 1; a lookup round's, the entries it settled), none when `hook` resolved to false.
   */
  commit(hook?: UnitCommitHook, units?: number): Promise<void>;
  /**
   * Queues a window's ledger change (running, complete) for the transaction of its rows: the
   * changes of the windows that share a transaction go in one statement, then the watermark once
   * when one completed. Not awaited: the next window is read meanwhile. Streams with ledger slots.
   */
  queueWindowChange(change: WindowChange): void;
  /** A unit complete already, with nothing to write (a window a resumed backfill had read). */
  alreadyComplete(): void;
}

/** A unit's row of the window ledger: its slot's window, and its status when the run planned it. */
export interface LedgerSlot {
  readonly window: SlotWindow;
  /** Absent: the slot had no row (the runner inserts it as planned). */
  readonly status: LedgerStatus | undefined;
}

/** The units one run reads, as a stream's `plan` decided them. */
export interface UnitPlan<Unit> {
  /**
   * The units, in rounds: a round is planned once the one before it has run and committed (a
   * queue's next due entries). Most streams have one round.
   */
  readonly rounds: AsyncIterable<readonly Unit[]> | Iterable<readonly Unit[]>;
  /** Units of a round read at once (default 1: one after the other, oldest first). */
  readonly concurrency?: number;
  /** After a round's units, stopped or not: commits what the round decided (a queue's outcomes). */
  endRound?(commit: UnitCommit): Promise<void>;
  /** After the last round of a run that neither stopped nor failed (a backfill's cursor). */
  finish?(): Promise<void>;
  /** A backfill's plan, for what the command tells of it. */
  readonly backfill?: BackfillPlan;
  /** What completed units move the watermark to (absent: they leave it, as a backfill does). */
  readonly watermark?: WatermarkRule;
}

/**
 * One stream, declared in one file of `src/sync/streams/` and listed once in the registry
 * (stream-registry.ts): everything that runs, plans, schedules, shows or resets a stream reads it
 * here. The runner (runUnits) owns what is the same for every stream: stopping, failures,
 * counters, the loader and its transactions, every row of the window ledger and the watermark;
 * the definition says what differs (its units, their ledger slots, its watermark rule).
 */
export interface StreamDefinition<Unit = unknown> {
  /** The name the command line, the schedule, sync_runs and sync_state use. */
  readonly name: StreamName;
  /** What the stream holds, for --help and status. */
  readonly description: string;
  /** The table its rows go to. */
  readonly table: DataTableSpec;
  /** Its cron when TELESYNC_SCHEDULE_<NAME> is not set. */
  readonly defaultSchedule: string;
  readonly state: StreamStateKind;
  /** Lookup streams whose queue this stream's rows fill: `lookup` runs them after it. */
  readonly feeds?: readonly StreamName[];
  /** Record → row or rejection (the one normalise step: receiveRecords). */
  readonly normalize: Normalizer<LoadRow>;
  /** How its rows are batched into transactions. */
  batching(run: RunContext): LoadBatching;
  /** The units of a run (pure decisions over what the database holds). */
  plan(run: RunContext, mode: RunMode): Promise<UnitPlan<Unit>>;
  /**
   * Reads one unit: fetches its pages from the client, hands their records to receiveRecords with
   * the stream's normaliser, and completes it through `commit` (a window's ledger change, or the
   * unit's commit with its deletion marks); the runner adds the watermark the plan declared and
   * counts the unit when its commit lands. A stop request thrown from here stops the run; an error
   * `failsAlone` accepts fails the unit and the run goes on; any other fails the run.
   */
  readUnit(run: RunContext, unit: Unit, loader: BatchLoader, commit: UnitCommit): Promise<void>;
  /** Errors that fail only their unit (the run goes on, and fails at its end). */
  failsAlone?(error: unknown): boolean;
  /**
   * The ledger slot a unit reads, for a stream whose state is a window ledger: the runner inserts
   * the planned rows of slots that have none, marks a failed unit's slot failed, and puts back the
   * slot's status when a stop cuts its unit short.
   */
  ledgerSlot?(unit: Unit): LedgerSlot;
  /** What a run would do (`--dry-run`), from the database alone. */
  preview(
    database: Database,
    accountId: string,
    settings: SyncSettings,
    now: EpochMicros,
    mode: RunMode,
  ): Promise<RunPreview>;
}

/** The units of a plan of one round. */
export function oneRound<Unit>(units: readonly Unit[]): Iterable<readonly Unit[]> {
  return [units];
}

/** Refuses a backfill of a stream that has no such mode (only trunk calls plan by range). */
export function requireSyncMode(stream: StreamName, mode: RunMode): void {
  if (mode.kind === 'backfill')
    throw new Error(`only trunk_calls can be backfilled, not ${stream}`);
}
