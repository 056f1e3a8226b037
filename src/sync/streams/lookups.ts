import { ApiError } from '../../api/api-errors.js';
import type { ReceivedRecord } from '../../api/received-json.js';
import {
  InvalidIdentifierError,
  isNotFound,
  type PagingOptions,
} from '../../api/telephony-client.js';
import type { LoadRow } from '../../db/data-loader.js';
import {
  countLookupsByStatus,
  findDueLookups,
  recordLookupOutcomes,
  type DueLookup,
  type LookupOutcome,
  type LookupQueue,
} from '../../db/repositories/lookup-queue-repository.js';
import type { DataTableSpec } from '../../db/table-specs.js';
import type { StreamName } from '../../domain/streams.js';
import { ONE_TRANSACTION_PER_UNIT, type BatchLoader } from '../../load/batch-loader.js';
import type { Normalizer } from '../../normalize/normalize-records.js';
import { describeError } from '../../util/coerce-error.js';
import { isStopped, throwIfStopped } from '../../util/stopped-error.js';
import { formatIsoMicros, MICROS_PER_HOUR, MICROS_PER_MINUTE } from '../../util/micros.js';
import { receiveRecords } from '../receive-records.js';
import { pagingOptions, type RunContext } from '../run-context.js';
import { summedPreview } from '../run-preview.js';
import { requireSyncMode, type StreamDefinition } from '../stream-definition.js';

/** What a lookup stream declares; lookupStream makes the rest of its definition. */
export interface LookupStreamSpec {
  readonly name: StreamName;
  readonly description: string;
  readonly table: DataTableSpec;
  readonly defaultSchedule: string;
  readonly queue: LookupQueue;
  /** Lookup streams whose queue its rows fill (StreamDefinition.feeds). */
  readonly feeds?: readonly StreamName[];
  /** What one queued key names, in messages. */
  readonly noun: string;
  /** Every record of one queued key. A 404 throws (see isNotFound). */
  fetch(run: RunContext, key: string, options: PagingOptions): Promise<ReceivedRecord[]>;
  readonly normalize: Normalizer<LoadRow>;
  /** Whether the rows found are worth fetching again later (a stream still running). */
  readonly recheck?: (rows: readonly LoadRow[]) => boolean;
  /** Before the queue is read: what fills it besides users (the packs stored messages name). */
  readonly beforePlan?: (run: RunContext) => Promise<void>;
  /** Parts of a run only the service can cost, besides the due entries (what beforePlan adds). */
  readonly unknownInPreview?: number;
}

/** One due entry of the queue, and where its round keeps the outcomes it commits. */
interface LookupUnit {
  readonly entry: DueLookup;
  readonly outcomes: Map<string, LookupOutcome>;
}

/** Entries taken from a queue per round; each round commits in one transaction. */
const LOOKUPS_PER_ROUND = 200;
/** First wait after a failed lookup; each further failure waits four times longer, up to a cap. */
const LOOKUP_RETRY_BASE_MICROS = MICROS_PER_MINUTE;
const LOOKUP_RETRY_MAX_MICROS = 6 * MICROS_PER_HOUR;
/** A call whose stream is still running is looked up again after this long (assumption A23). */
const RUNNING_STREAM_RECHECK_MICROS = 10 * MICROS_PER_MINUTE;

/**
 * A lookup stream (messages, powerpacks, call_streams): records fetched by key from a queue table.
 * Plan: the due entries of the queue, in rounds → fetch each entry's records (several entries at
 * once) → normalise → load, one transaction per round whose commit hook records each entry's
 * outcome in the queue. A 404 ends an entry as not_found; a failure waits longer each time and
 * ends it as failed after TELESYNC_LOOKUP_MAX_ATTEMPTS attempts; wrong credentials or a refused
 * request stop the run (every other entry would fail the same way).
 */
export function lookupStream(spec: LookupStreamSpec): StreamDefinition<LookupUnit> {
  return {
    name: spec.name,
    description: spec.description,
    table: spec.table,
    defaultSchedule: spec.defaultSchedule,
    state: { kind: 'queue', queue: spec.queue },
    ...(spec.feeds === undefined ? {} : { feeds: spec.feeds }),
    normalize: spec.normalize,
    batching: () => ONE_TRANSACTION_PER_UNIT,
    async plan(run, mode) {
      requireSyncMode(spec.name, mode);
      await spec.beforePlan?.(run);
      // An entry stopped while waiting to be sent has no outcome: it stays due as it was.
      const outcomes = new Map<string, LookupOutcome>();
      return {
        rounds: dueRounds(run, spec.queue, outcomes),
        concurrency: run.pageConcurrency,
        endRound: async (commit) => {
          const { schema } = run.database;
          // An entry to try again is not done; the others are, once their outcomes commit.
          const settled = [...outcomes.values()].filter((outcome) => outcome.status !== 'retry');
          await commit.commit(
            (trx, at) => recordLookupOutcomes(trx, schema, spec.queue, run.accountId, outcomes, at),
            settled.length,
          );
          outcomes.clear();
        },
      };
    },
    async readUnit(run, { entry, outcomes }, loader) {
      outcomes.set(entry.key, await lookUp(run, spec, entry, loader, pagingOptions(run)));
    },
    preview: async (database, accountId) => {
      const counts = await countLookupsByStatus(database.db, spec.queue, accountId);
      return summedPreview(
        {
          accountId,
          stream: spec.name,
          mode: 'sync',
          range: undefined,
          windows: [],
          lookupsDue: counts.pending ?? 0,
        },
        spec.unknownInPreview ?? 0,
      );
    },
  };
}

/**
 * The queue's due entries, a round at a time: the next round is taken once the one before has
 * committed its outcomes.
 */
async function* dueRounds(
  run: RunContext,
  queue: LookupQueue,
  outcomes: Map<string, LookupOutcome>,
): AsyncIterable<readonly LookupUnit[]> {
  for (;;) {
    // Stop between rounds: each round commits whole, so nothing fetched is left unstored.
    throwIfStopped(run.signal, 'stopped on request between two rounds of lookups');
    const due = await findDueLookups(
      run.database.db,
      queue,
      run.accountId,
      formatIsoMicros(run.now()),
      LOOKUPS_PER_ROUND,
    );
    if (due.length === 0) return;
    yield due.map((entry) => ({ entry, outcomes }));
  }
}

/**
 * Fetches one entry's records and passes them through the normalise and load stages; returns the
 * entry's outcome for the queue.
 */
async function lookUp(
  context: RunContext,
  lookup: LookupStreamSpec,
  entry: DueLookup,
  loader: BatchLoader,
  options: PagingOptions,
): Promise<LookupOutcome> {
  let records: ReceivedRecord[];
  try {
    records = await lookup.fetch(context, entry.key, options);
  } catch (error) {
    // A stop request goes to the runner: the entry gets no outcome, no attempt counted.
    if (isStopped(error)) throw error;
    return failedLookup(context, lookup, entry, error);
  }
  const { rows, rejects } = await receiveRecords(context, records, lookup.normalize, loader);
  if (rows.length === 0 && rejects.length > 0) {
    // Asking again would return the same record: give up now, and say why.
    return {
      status: 'retry',
      error: `the ${lookup.noun} record was rejected: ${rejects[0]!.reason}`,
      nextAttemptAt: undefined,
    };
  }
  if (lookup.recheck?.(rows) === true) {
    return {
      status: 'recheck',
      nextAttemptAt: formatIsoMicros(context.now() + RUNNING_STREAM_RECHECK_MICROS),
    };
  }
  return { status: 'fetched' };
}

/** The outcome of a lookup whose fetch failed; throws what must stop the run. */
function failedLookup(
  context: RunContext,
  lookup: LookupStreamSpec,
  entry: DueLookup,
  error: unknown,
): LookupOutcome {
  if (isNotFound(error))
    return { status: 'not_found', error: `the service has no ${lookup.noun} ${entry.key}` };
  // A key that cannot be an identifier was never sent: asking again cannot find it.
  if (error instanceof InvalidIdentifierError) return { status: 'not_found', error: error.message };
  if (error instanceof ApiError && !error.retryable && error.kind === 'http') throw error;
  if (!(error instanceof ApiError)) throw error;
  const attempts = entry.attempts + 1;
  const giveUp = attempts >= context.settings.lookupMaxAttempts;
  const wait = Math.min(LOOKUP_RETRY_MAX_MICROS, LOOKUP_RETRY_BASE_MICROS * 4 ** (attempts - 1));
  if (giveUp) {
    context.log.warn(
      { key: entry.key, attempts },
      `gave up looking up ${lookup.noun} ${entry.key} after ${attempts} attempts: ${describeError(error)}`,
    );
  }
  return {
    status: 'retry',
    error: describeError(error),
    nextAttemptAt: giveUp ? undefined : formatIsoMicros(context.now() + wait),
  };
}
