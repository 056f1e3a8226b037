import { DEFAULT_DATASET_SIZES } from '../src/simulator/data/dataset.js';
import type { LoadStrategy } from '../src/db/data-loader.js';
import type {
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
 * Benchmark 5, loader choice: telesync's two ways of upserting (COPY to a staging table then one
 * upsert, or multi-row INSERT … ON CONFLICT) at 500, 2,000 and 10,000 rows a batch, on real
 * PostgreSQL, into the real trunk_calls table: new rows, and the same rows again (unchanged).
 * The product should keep the faster; this records the figures and says whether it does.
 */

/** What the sync engine uses when nothing says otherwise (src/sync/run-stream.ts). */
const PRODUCT_STRATEGY: LoadStrategy = 'copy';
const STRATEGIES: readonly LoadStrategy[] = ['copy', 'insert'];

interface ConfigFigures {
  readonly strategy: LoadStrategy;
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
      strategies: [...STRATEGIES],
      runs: settings.runs,
    };
    context.log(
      `${formatInteger(settings.loaderRows)} rows × ${STRATEGIES.length} strategies × ${settings.loaderBatchSizes.length} batch sizes × ${settings.runs} run(s)`,
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
  for (const strategy of STRATEGIES) {
    for (const batchSize of settings.loaderBatchSizes) {
      const runs = result.measurements.filter(
        (m) => m.strategy === strategy && m.batchSize === batchSize,
      );
      if (runs.length === 0) throw new HarnessError(`no measurement of ${strategy}/${batchSize}`);
      configs.push({
        strategy,
        batchSize,
        freshRowsPerSecond: round(median(runs.map((m) => (m.rows / m.freshMs) * 1000))),
        unchangedRowsPerSecond: round(median(runs.map((m) => (m.rows / m.unchangedMs) * 1000))),
        freshWritten: median(runs.map((m) => m.freshWritten)),
        unchangedWritten: median(runs.map((m) => m.unchangedWritten)),
      });
    }
  }
  const fastest = [...configs].sort((a, b) => b.freshRowsPerSecond - a.freshRowsPerSecond)[0]!;
  const at = (strategy: LoadStrategy, batchSize: number): ConfigFigures =>
    configs.find((c) => c.strategy === strategy && c.batchSize === batchSize)!;
  const productBatch = settings.batchSize;
  const product = configs.find(
    (c) => c.strategy === PRODUCT_STRATEGY && c.batchSize === productBatch,
  );
  const other = STRATEGIES.find((strategy) => strategy !== PRODUCT_STRATEGY)!;
  const productVsOther =
    product === undefined
      ? null
      : round(product.freshRowsPerSecond / at(other, productBatch).freshRowsPerSecond, 3);
  const notes = [
    `Each configuration loads the same ${formatInteger(result.rows)} normalised trunk-call rows (telesync's parser and normaliser over simulated records) with telesync's upsertDataRows, one transaction per batch, into trunk_calls emptied (TRUNCATE) and CHECKPOINTed before each load; then the same rows again ("unchanged": every row present with the same content, so nothing is rewritten). Configurations rotate between runs.`,
    "'insert' splits a batch into statements of at most 65,000 parameters (2,500 rows of trunk_calls' 26 columns), so its 10,000-row batch is four statements in one transaction.",
    `Fastest for new rows: ${fastest.strategy} at ${formatInteger(fastest.batchSize)} rows a batch (${formatInteger(fastest.freshRowsPerSecond)} rows/s). The product uses '${PRODUCT_STRATEGY}' with TELESYNC_BATCH_SIZE ${formatInteger(productBatch)}${product === undefined ? '' : ` (${formatInteger(product.freshRowsPerSecond)} rows/s here)`}.`,
  ];
  const oddWrites = configs.filter(
    (c) => c.freshWritten !== result.rows || c.unchangedWritten !== 0,
  );
  if (oddWrites.length > 0) {
    notes.push(
      `Rows reported written differ from expectations (new: all, unchanged: none) for ${oddWrites
        .map(
          (c) =>
            `${c.strategy}/${c.batchSize}: ${c.freshWritten} new, ${c.unchangedWritten} unchanged`,
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
      strategies: STRATEGIES,
      productStrategy: PRODUCT_STRATEGY,
      productBatchSize: productBatch,
    },
    figures: {
      configurations: configs,
      fastest: { strategy: fastest.strategy, batchSize: fastest.batchSize },
      productVsOtherAtProductBatch: productVsOther,
    },
    runs: result.measurements,
    targets: [
      checkTarget({
        id: 'loader-product-keeps-faster',
        description: `the product's '${PRODUCT_STRATEGY}' vs '${other}' at its batch size (${formatInteger(productBatch)}), new rows`,
        measured: productVsOther,
        unit: '×',
        comparator: '>=',
        threshold: 1,
        basis: `median of ${settings.runs} run${settings.runs === 1 ? '' : 's'}`,
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
  const copyAt = (batchSize: number): ConfigFigures | undefined =>
    configs.find((c) => c.strategy === 'copy' && c.batchSize === batchSize);
  return {
    headers: [
      'strategy',
      'batch',
      'new rows/s',
      'unchanged rows/s',
      'new vs copy',
      'runs (new rows/s)',
    ],
    rows: configs.map((c) => {
      const copy = copyAt(c.batchSize);
      return [
        c.strategy,
        formatInteger(c.batchSize),
        formatInteger(c.freshRowsPerSecond),
        formatInteger(c.unchangedRowsPerSecond),
        copy === undefined ? '—' : formatPercent(c.freshRowsPerSecond / copy.freshRowsPerSecond, 0),
        measurements
          .filter((m) => m.strategy === c.strategy && m.batchSize === c.batchSize)
          .map((m) => formatDecimal((m.rows / m.freshMs) * 1000, 0))
          .join(' / '),
      ];
    }),
  };
}
