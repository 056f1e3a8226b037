import { ApiError } from '../../api/api-errors.js';
import type { ReceivedRecord } from '../../api/received-json.js';
import {
  InvalidIdentifierError,
  isNotFound,
  type PagingOptions,
} from '../../api/telephony-client.js';
import type { LoadRow } from '../../db/data-loader.js';
import {
  findDueLookups,
  recordLookupOutcomes,
  type DueLookup,
  type LookupOutcome,
  type LookupQueue,
} from '../../db/repositories/lookup-queue-repository.js';
import {
  queueReferencedPowerpacks,
  requeueStalePowerpacks,
} from '../../db/repositories/powerpack-refs-repository.js';
import { CALL_STREAMS, MESSAGES, POWERPACKS, type DataTableSpec } from '../../db/table-specs.js';
import { BatchLoader, ONE_TRANSACTION_PER_UNIT } from '../../load/batch-loader.js';
import { normalizeCallStream } from '../../normalize/normalize-call-stream.js';
import { normalizeMessage } from '../../normalize/normalize-message.js';
import { normalizePowerpack } from '../../normalize/normalize-powerpack.js';
import type { Normalizer } from '../../normalize/normalize-records.js';
import { describeError } from '../../util/coerce-error.js';
import { isStopped } from '../../util/stopped-error.js';
import { forEachConcurrently } from '../../util/for-each-concurrently.js';
import { formatIsoMicros, MICROS_PER_HOUR, MICROS_PER_MINUTE } from '../../util/micros.js';
import { receiveRecords } from '../receive-records.js';
import { pagingOptions, type RunContext } from '../run-context.js';

/**
 * The lookup streams (messages, powerpacks, call_streams): records fetched by key from a queue
 * table. Plan: the due entries of the queue, in rounds → fetch each entry's records (several
 * entries at once) → normalise → load, one transaction per round whose commit hook records each
 * entry's outcome in the queue.
 */
interface LookupStream {
  readonly queue: LookupQueue;
  readonly spec: DataTableSpec;
  readonly noun: string;
  /** Every record of one queued key. A 404 throws (see isNotFound). */
  fetch(context: RunContext, key: string, options: PagingOptions): Promise<ReceivedRecord[]>;
  readonly normalize: Normalizer<LoadRow>;
  /** Whether the rows found are worth fetching again later (a stream still running). */
  readonly recheck?: (rows: readonly LoadRow[]) => boolean;
}

/** Entries taken from a queue per round; each round commits in one transaction. */
const LOOKUPS_PER_ROUND = 200;
/** First wait after a failed lookup; each further failure waits four times longer, up to a cap. */
const LOOKUP_RETRY_BASE_MICROS = MICROS_PER_MINUTE;
const LOOKUP_RETRY_MAX_MICROS = 6 * MICROS_PER_HOUR;
/** A call whose stream is still running is looked up again after this long (assumption A23). */
const RUNNING_STREAM_RECHECK_MICROS = 10 * MICROS_PER_MINUTE;

const MESSAGE_LOOKUP: LookupStream = {
  queue: 'message_refs',
  spec: MESSAGES,
  noun: 'message',
  fetch: async (context, key, options) => [await context.client.getMessage(key, options)],
  normalize: normalizeMessage,
};

const POWERPACK_LOOKUP: LookupStream = {
  queue: 'powerpack_refs',
  spec: POWERPACKS,
  noun: 'sender pack',
  fetch: async (context, key, options) => [await context.client.getPowerpack(key, options)],
  normalize: normalizePowerpack,
};

const CALL_STREAM_LOOKUP: LookupStream = {
  queue: 'call_stream_refs',
  spec: CALL_STREAMS,
  noun: 'call',
  fetch: async (context, key, options) => {
    const records: ReceivedRecord[] = [];
    for await (const page of context.client.iterateCallStreams(key, options))
      records.push(...page.records);
    return records;
  },
  normalize: normalizeCallStream,
  recheck: (rows) => rows.some((row) => row.end_time === null),
};

/** Fetches every message queued in message_refs. */
export const syncMessages = (context: RunContext): Promise<void> =>
  runLookups(context, MESSAGE_LOOKUP);

/** Fetches the stream records of every call queued in call_stream_refs. */
export const syncCallStreams = (context: RunContext): Promise<void> =>
  runLookups(context, CALL_STREAM_LOOKUP);

/**
 * Queues the sender packs that stored messages reference and that are not queued yet, puts packs
 * fetched longer ago than the refresh age back in the queue, then fetches the queue.
 */
export async function syncPowerpacks(context: RunContext): Promise<void> {
  const { db, schema } = context.database;
  await queueReferencedPowerpacks(db, schema, context.accountId);
  const staleBefore = formatIsoMicros(
    context.now() - context.settings.powerpackRefreshHours * MICROS_PER_HOUR,
  );
  await requeueStalePowerpacks(db, context.accountId, staleBefore);
  await runLookups(context, POWERPACK_LOOKUP);
}

/**
 * Takes due entries off the queue in rounds, looks each up (several at once), and commits each
 * round's rows, rejects and queue outcomes in one transaction. A 404 ends an entry as not_found; a
 * failure waits longer each time and ends it as failed after TELESYNC_LOOKUP_MAX_ATTEMPTS attempts;
 * wrong credentials or a refused request stop the run (every other entry would fail the same way).
 */
async function runLookups(context: RunContext, lookup: LookupStream): Promise<void> {
  const options = pagingOptions(context);
  const loader = new BatchLoader(context, lookup.spec, ONE_TRANSACTION_PER_UNIT);
  for (;;) {
    // Stop between rounds: each round commits whole, so nothing fetched is left unstored.
    if (context.signal?.aborted) {
      context.stats.stopped = true;
      return;
    }
    const due = await findDueLookups(
      context.database.db,
      lookup.queue,
      context.accountId,
      formatIsoMicros(context.now()),
      LOOKUPS_PER_ROUND,
    );
    if (due.length === 0) return;
    context.stats.windowsPlanned += due.length;

    const outcomes = new Map<string, LookupOutcome>();
    await forEachConcurrently(due, context.pageConcurrency, async (entry) => {
      const outcome = await lookUp(context, lookup, entry, loader, options);
      // Stopped while waiting to be sent: the entry stays due as it was, no attempt counted.
      if (outcome === 'stopped') context.stats.stopped = true;
      else outcomes.set(entry.key, outcome);
    });
    await loader.commit((trx, now) =>
      recordLookupOutcomes(
        trx,
        context.database.schema,
        lookup.queue,
        context.accountId,
        outcomes,
        now,
      ),
    );
    context.stats.windowsCompleted += [...outcomes.values()].filter(
      (outcome) => outcome.status !== 'retry',
    ).length;
  }
}

/**
 * Fetches one entry's records and passes them through the normalise and load stages; returns the
 * entry's outcome for the queue.
 */
async function lookUp(
  context: RunContext,
  lookup: LookupStream,
  entry: DueLookup,
  loader: BatchLoader,
  options: PagingOptions,
): Promise<LookupOutcome | 'stopped'> {
  let records: ReceivedRecord[];
  try {
    records = await lookup.fetch(context, entry.key, options);
  } catch (error) {
    if (isStopped(error)) return 'stopped';
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
  lookup: LookupStream,
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
