import { DEFAULT_DATASET_SIZES } from '../src/simulator/data/dataset.js';
import type {
  LoadWay,
  LoaderChoiceInput,
  LoaderChoiceResult,
  LoaderMeasurement,
} from './workers/loader-choice-worker.js';
import type { BenchContext } from './support/bench-context.js';
import { HarnessError } from './support/bench-errors.js';
import {
  checkTarget,
  formatDecimal,
  formatInteger,
  formatPercent,
  type BenchmarkReport,
  type Table,
} from './support/report.js';
import { microsToIso } from './support/simulator-oracle.js';
import { median, round } from './support/stats.js';
import { runWorkerProcess } from './support/worker-protocol.js';

/**
 * Benchmark 5, loader choice: the product's two ways of loading a batch (a COPY straight into the
 * table, or COPY to a staging table then one upsert) at 500, 2,000 and 10,000 rows a batch, on
 * real PostgreSQL, into the real trunk_calls table: new rows, and the same rows again (a re-read).
 * The product tries new rows directly (UpsertOptions.direct): that must be faster than the upsert
 * it falls back to, measured in the same run.
 */

const WAYS: readonly LoadWay[] = ['direct', 'staging'];

interface ConfigFigures {
  readonly way: LoadWay;
  readonly batchSize: number;
  readonly freshRowsPerSecond: number;
  readonly unchangedRowsPerSecond: number;
  readonly freshWritten: number;
  readonly unchangedWritten: number;
}

export async function runLoaderChoice(context: BenchContext): Promise<BenchmarkReport> {
  const startedAt = new Date().toISOString();
  const { settings, db } = context;
  const schema = await db.createSchema('loader');
  let result: LoaderChoiceResult;
  try {
    const calls = Math.max(settings.calls, settings.loaderRows * 2);
    const input: LoaderChoiceInput = {
      // The oracle only needs the seed, the sizes and an anchor: no simulator process is needed.
      oracle: {
        dataset: {
          seed: settings.seed,
          sizes: { ...DEFAULT_DATASET_SIZES, calls },
          anchor: microsToIso(Date.now() * 1000),
          now: microsToIso(Date.now() * 1000),
          accounts: [],
        },
        account: context.account,
      },
      databaseUrl: settings.databaseUrl,
      schema,
      rows: settings.loaderRows,
      batchSizes: [...settings.loaderBatchSizes],
      ways: [...WAYS],
      runs: settings.runs,
    };
    context.log(
      `${formatInteger(settings.loaderRows)} rows × ${WAYS.length} ways × ${settings.loaderBatchSizes.length} batch sizes × ${settings.runs} run(s)`,
    );
    ({ result } = await runWorkerProcess<LoaderChoiceResult>('loader-choice-worker', input, {
      label: 'loader choice',
      timeoutMs: 2 * 60 * 60_000,
      track: (pid) => context.track(pid),
      onProgress: (line) => context.log(`  ${line}`),
    }));
  } finally {
    await db.dropSchema(schema);
  }

  const configs: ConfigFigures[] = [];
  for (const way of WAYS) {
    for (const batchSize of settings.loaderBatchSizes) {
      const runs = result.measurements.filter((m) => m.way === way && m.batchSize === batchSize);
      if (runs.length === 0) throw new HarnessError(`no measurement of ${way}/${batchSize}`);
      configs.push({
        way,
        batchSize,
        freshRowsPerSecond: round(median(runs.map((m) => (m.rows / m.freshMs) * 1000))),
        unchangedRowsPerSecond: round(median(runs.map((m) => (m.rows / m.unchangedMs) * 1000))),
        freshWritten: median(runs.map((m) => m.freshWritten)),
        unchangedWritten: median(runs.map((m) => m.unchangedWritten)),
      });
    }
  }
  const fastest = [...configs].sort((a, b) => b.freshRowsPerSecond - a.freshRowsPerSecond)[0]!;
  const productBatch = settings.batchSize;
  // Within each run, direct ÷ staging for new rows at the product's batch size; the median of them.
  const ratioOf = (run: number, pick: (m: LoaderMeasurement) => number): number | undefined => {
    const of = (way: LoadWay) =>
      result.measurements.find(
        (m) => m.run === run && m.way === way && m.batchSize === productBatch,
      );
    const direct = of('direct');
    const staging = of('staging');
    return direct === undefined || staging === undefined ? undefined : pick(staging) / pick(direct);
  };
  const runNumbers = [...new Set(result.measurements.map((m) => m.run))];
  const ratios = (pick: (m: LoaderMeasurement) => number): number[] =>
    runNumbers.map((run) => ratioOf(run, pick)).filter((r): r is number => r !== undefined);
  const newRatios = ratios((m) => m.freshMs);
  const rereadRatios = ratios((m) => m.unchangedMs);
  const directVsStaging = newRatios.length === 0 ? null : round(median(newRatios), 3);
  const rereadDirectVsStaging = rereadRatios.length === 0 ? null : round(median(rereadRatios), 3);
  const notes = [
    `Each configuration loads the same ${formatInteger(result.rows)} normalised trunk-call rows (telesync's parser and normaliser over simulated records) with telesync's upsertDataRows, one transaction per batch, into trunk_calls emptied (TRUNCATE) and CHECKPOINTed before each load; then the same rows again ("re-read": every row present with the same content, so nothing is rewritten). Configurations rotate between runs.`,
    "'direct' is a COPY into the table inside a savepoint; on a re-read each batch meets a unique violation, rolls back to the savepoint and is upserted through the staging table, the worst case: the product's lanes stop trying directly after a conflict (doubling back-off).",
    `Fastest for new rows: ${fastest.way} at ${formatInteger(fastest.batchSize)} rows a batch (${formatInteger(fastest.freshRowsPerSecond)} rows/s). At TELESYNC_BATCH_SIZE ${formatInteger(productBatch)}, direct ÷ staging speed in the same run: ${directVsStaging ?? '—'}× for new rows, ${rereadDirectVsStaging ?? '—'}× for a re-read.`,
  ];
  const oddWrites = configs.filter(
    (c) => c.freshWritten !== result.rows || c.unchangedWritten !== 0,
  );
  if (oddWrites.length > 0) {
    notes.push(
      `Rows reported written differ from expectations (new: all, unchanged: none) for ${oddWrites
        .map(
          (c) => `${c.way}/${c.batchSize}: ${c.freshWritten} new, ${c.unchangedWritten} unchanged`,
        )
        .join('; ')}.`,
    );
  }
  return {
    name: 'loader-choice',
    title: `5. Loader choice — ${formatInteger(result.rows)} rows a load`,
    status: 'ok',
    startedAt,
    finishedAt: new Date().toISOString(),
    settings: {
      rows: result.rows,
      runs: settings.runs,
      batchSizes: settings.loaderBatchSizes,
      ways: WAYS,
      productBatchSize: productBatch,
    },
    figures: {
      configurations: configs,
      fastest: { way: fastest.way, batchSize: fastest.batchSize },
      directVsStagingNewRows: directVsStaging,
      directVsStagingReread: rereadDirectVsStaging,
    },
    runs: result.measurements,
    targets: [
      checkTarget({
        id: 'loader-direct-faster-for-new-rows',
        description: `new rows by a direct COPY vs by the staging upsert, in the same run, at the product's batch size (${formatInteger(productBatch)})`,
        measured: directVsStaging,
        unit: '×',
        comparator: '>=',
        threshold: 1,
        basis: `median of ${newRatios.length} in-run ratio${newRatios.length === 1 ? '' : 's'}`,
      }),
    ],
    tables: [
      {
        title: 'Rows per second (median of runs)',
        table: configsTable(configs, result.measurements),
      },
    ],
    notes,
  };
}

function configsTable(
  configs: readonly ConfigFigures[],
  measurements: readonly LoaderMeasurement[],
): Table {
  const stagingAt = (batchSize: number): ConfigFigures | undefined =>
    configs.find((c) => c.way === 'staging' && c.batchSize === batchSize);
  return {
    headers: [
      'way',
      'batch',
      'new rows/s',
      're-read rows/s',
      'new vs staging',
      'runs (new rows/s)',
    ],
    rows: configs.map((c) => {
      const staging = stagingAt(c.batchSize);
      return [
        c.way,
        formatInteger(c.batchSize),
        formatInteger(c.freshRowsPerSecond),
        formatInteger(c.unchangedRowsPerSecond),
        staging === undefined
          ? '—'
          : formatPercent(c.freshRowsPerSecond / staging.freshRowsPerSecond, 0),
        measurements
          .filter((m) => m.way === c.way && m.batchSize === c.batchSize)
          .map((m) => formatDecimal((m.rows / m.freshMs) * 1000, 0))
          .join(' / '),
      ];
    }),
  };
}
