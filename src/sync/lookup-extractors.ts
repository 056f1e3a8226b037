import { sql } from 'kysely';
import { ApiError } from '../api/api-errors.js';
import type { ReceivedRecord } from '../api/received-json.js';
import { isNotFound } from '../api/telephony-client.js';
import type { RequestOptions } from '../api/transport.js';
import { upsertDataRows, type LoadRow } from '../db/data-loader.js';
import {
  findDueLookups,
  recordLookupOutcome,
  type DueLookup,
  type LookupOutcome,
  type LookupQueue,
} from '../db/repositories/lookup-queue-repository.js';
import {
  quarantineRecords,
  type Quarantined,
} from '../db/repositories/rejected-records-repository.js';
import { CALL_STREAMS, MESSAGES, POWERPACKS, type DataTableSpec } from '../db/table-specs.js';
import type { NormalizeResult } from '../normalize/normalize-result.js';
import { normalizeCallStream } from '../normalize/normalize-call-stream.js';
import { normalizeMessage } from '../normalize/normalize-message.js';
import { normalizeSenderPack } from '../normalize/normalize-sender-pack.js';
import { describeError } from '../util/coerce-error.js';
import { formatIsoMicros, MICROS_PER_HOUR, MICROS_PER_MINUTE } from '../util/micros.js';
import type { RunContext } from './run-context.js';
import { forEachConcurrently } from './trunk-window-reader.js';

/** Entries taken from a queue per round; each round commits in one transaction. */
const LOOKUPS_PER_ROUND = 200;
/** First wait after a failed lookup; each further failure waits four times longer, up to a cap. */
const LOOKUP_RETRY_BASE_MICROS = MICROS_PER_MINUTE;
const LOOKUP_RETRY_MAX_MICROS = 6 * MICROS_PER_HOUR;
/** A call whose stream is still running is looked up again after this long (assumption A23). */
const RUNNING_STREAM_RECHECK_MICROS = 10 * MICROS_PER_MINUTE;

type StreamName = 'messages' | 'powerpacks' | 'call_streams';

/** What one lookup found. */
interface Found {
  rows: LoadRow[];
  rejects: Quarantined[];
  /** Why the records could not be stored, when none could. */
  rejected: string | undefined;
  /** Look again later (a stream still running). */
  recheck: boolean;
}

interface LookupStream {
  readonly stream: StreamName;
  readonly queue: LookupQueue;
  readonly spec: DataTableSpec;
  readonly noun: string;
  fetch(context: RunContext, key: string, options: RequestOptions): Promise<Found>;
}

function fromRecords(
  context: RunContext,
  stream: StreamName,
  records: readonly ReceivedRecord[],
  normalize: (record: ReceivedRecord, ctx: { accountId: string }) => NormalizeResult<LoadRow>,
): Found {
  const found: Found = { rows: [], rejects: [], rejected: undefined, recheck: false };
  context.stats.recordsFetched += records.length;
  for (const record of records) {
    const result = normalize(record, { accountId: context.accountId });
    if (result.ok) {
      found.rows.push(result.row);
    } else {
      found.rejected ??= result.rejection.reason;
      found.rejects.push({
        accountId: context.accountId,
        stream,
        reason: result.rejection.reason,
        recordKey: result.rejection.recordKey,
        bytes: record.bytes,
      });
    }
  }
  return found;
}

const MESSAGE_LOOKUP: LookupStream = {
  stream: 'messages',
  queue: 'message_refs',
  spec: MESSAGES,
  noun: 'message',
  fetch: async (context, key, options) =>
    fromRecords(
      context,
      'messages',
      [await context.client.getMessage(key, options)],
      normalizeMessage,
    ),
};

const POWERPACK_LOOKUP: LookupStream = {
  stream: 'powerpacks',
  queue: 'powerpack_refs',
  spec: POWERPACKS,
  noun: 'sender pack',
  fetch: async (context, key, options) =>
    fromRecords(
      context,
      'powerpacks',
      [await context.client.getPowerpack(key, options)],
      normalizeSenderPack,
    ),
};

const CALL_STREAM_LOOKUP: LookupStream = {
  stream: 'call_streams',
  queue: 'call_stream_refs',
  spec: CALL_STREAMS,
  noun: 'call',
  fetch: async (context, key, options) => {
    const records: ReceivedRecord[] = [];
    for await (const page of context.client.iterateCallStreams(key, options))
      records.push(...page.records);
    const found = fromRecords(context, 'call_streams', records, normalizeCallStream);
    found.recheck = found.rows.some((row) => row.end_time === null);
    return found;
  },
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
  await sql`
    INSERT INTO ${sql.id(schema, 'powerpack_refs')} (account_id, powerpack_uuid, requested_by)
    SELECT DISTINCT account_id, powerpack_id, 'messages'
      FROM ${sql.id(schema, 'messages')}
     WHERE account_id = ${context.accountId} AND powerpack_id IS NOT NULL AND powerpack_id <> ''
    ON CONFLICT DO NOTHING
  `.execute(db);
  const staleBefore = formatIsoMicros(
    context.now() - context.settings.powerpackRefreshHours * MICROS_PER_HOUR,
  );
  await db
    .updateTable('powerpack_refs')
    .set({ status: 'pending', next_attempt_at: null })
    .where('account_id', '=', context.accountId)
    .where('status', '=', 'fetched')
    .where('fetched_at', '<', staleBefore)
    .execute();
  await runLookups(context, POWERPACK_LOOKUP);
}

/**
 * Takes due entries off the queue in rounds, looks each up (several at once), and commits each
 * round's rows, rejects and queue outcomes in one transaction. A 404 ends an entry as not_found; a
 * failure waits longer each time and ends it as failed after TELESYNC_LOOKUP_MAX_ATTEMPTS attempts;
 * wrong credentials or a refused request stop the run (every other entry would fail the same way).
 */
async function runLookups(context: RunContext, lookup: LookupStream): Promise<void> {
  const options: RequestOptions = { meter: context.meter };
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

    const results = new Map<string, { found?: Found; outcome: LookupOutcome }>();
    await forEachConcurrently(due, context.pageConcurrency, async (entry) => {
      results.set(entry.key, await lookUp(context, lookup, entry, options));
    });

    const now = formatIsoMicros(context.now());
    const rows = [...results.values()].flatMap((result) => result.found?.rows ?? []);
    const rejects = [...results.values()].flatMap((result) => result.found?.rejects ?? []);
    const written = await context.database.db.transaction().execute(async (trx) => {
      const upsert = await upsertDataRows(
        trx,
        context.database.schema,
        lookup.spec,
        rows,
        now,
        context.loadStrategy,
      );
      await quarantineRecords(trx, context.database.schema, rejects, context.runId);
      for (const [key, { outcome }] of results) {
        await recordLookupOutcome(trx, lookup.queue, context.accountId, key, outcome, now);
      }
      return upsert.written;
    });
    context.stats.recordsUpserted += rows.length;
    context.stats.recordsChanged += written;
    context.stats.recordsRejected += rejects.length;
    context.stats.windowsCompleted += [...results.values()].filter(
      (result) => result.outcome.status !== 'retry',
    ).length;
  }
}

async function lookUp(
  context: RunContext,
  lookup: LookupStream,
  entry: DueLookup,
  options: RequestOptions,
): Promise<{ found?: Found; outcome: LookupOutcome }> {
  try {
    const found = await lookup.fetch(context, entry.key, options);
    if (found.rejected !== undefined && found.rows.length === 0) {
      // Asking again would return the same record: give up now, and say why.
      return {
        found,
        outcome: {
          status: 'retry',
          error: `the ${lookup.noun} record was rejected: ${found.rejected}`,
          nextAttemptAt: undefined,
        },
      };
    }
    if (found.recheck) {
      return {
        found,
        outcome: {
          status: 'recheck',
          nextAttemptAt: formatIsoMicros(context.now() + RUNNING_STREAM_RECHECK_MICROS),
        },
      };
    }
    return { found, outcome: { status: 'fetched' } };
  } catch (error) {
    if (isNotFound(error)) {
      return {
        outcome: { status: 'not_found', error: `the service has no ${lookup.noun} ${entry.key}` },
      };
    }
    if (error instanceof ApiError && !error.retryable && error.kind === 'http') throw error;
    if (error instanceof ApiError && error.kind === 'aborted') throw error;
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
      outcome: {
        status: 'retry',
        error: describeError(error),
        nextAttemptAt: giveUp ? undefined : formatIsoMicros(context.now() + wait),
      },
    };
  }
}
