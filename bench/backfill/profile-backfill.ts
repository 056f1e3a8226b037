import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startBenchSimulator, type BenchContext } from '../support/bench-context.js';
import { HarnessError } from '../support/bench-errors.js';
import {
  findMainProfile,
  summarizeCpuProfile,
  type ProfileSummary,
} from '../support/cpu-profile.js';
import { createScratchDir } from '../support/paths.js';
import { SimulatorOracle } from '../support/simulator-oracle.js';
import { round } from '../support/stats.js';
import { runTelesync, stringField } from '../support/telesync-command.js';
import { verifyStoredRows } from '../support/verify-rows.js';
import type { BackfillProfile } from './throughput-round.js';

/**
 * One extra backfill (`--days profileDays`), untimed, with both telesync and a simulator of its own
 * under `node --cpu-prof`: where the CPU time goes.
 */
export async function profileBackfill(context: BenchContext): Promise<BackfillProfile> {
  const { db, settings } = context;
  const scratch = createScratchDir('profile');
  const simulatorDir = join(scratch.path, 'simulator');
  const telesyncDir = join(scratch.path, 'telesync');
  mkdirSync(simulatorDir);
  mkdirSync(telesyncDir);
  try {
    context.log(
      `profile: telesync backfill --days ${settings.profileDays} under node --cpu-prof (untimed)`,
    );
    const simulator = await startBenchSimulator(context, {
      nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${simulatorDir}`],
    });
    const schema = await db.createSchema('profile');
    let rows: number;
    let wallMs: number;
    try {
      const dataset = await simulator.dataset();
      const oracle = new SimulatorOracle({ dataset, account: context.account });
      const run = await runTelesync(
        ['backfill', '--days', String(settings.profileDays)],
        {
          databaseUrl: settings.databaseUrl,
          schema,
          simulator,
          maxRps: settings.unthrottledMaxRps,
          concurrency: settings.concurrency,
        },
        {
          label: 'profiled telesync backfill',
          timeoutMs: 60 * 60_000,
          nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${telesyncDir}`],
          track: (pid) => context.track(pid),
        },
      );
      rows = await verifyStoredRows('profiled backfill', db, schema, oracle, {
        from: stringField(run.json, 'covered_from'),
        to: stringField(run.json, 'covered_to'),
      });
      wallMs = round(run.wallMs);
    } finally {
      await simulator.stop();
      await db.dropSchema(schema);
    }
    const telesyncProfile = findMainProfile(telesyncDir);
    if (telesyncProfile === undefined) throw new HarnessError('telesync wrote no CPU profile');
    const simulatorProfile = findMainProfile(simulatorDir);
    return {
      telesync: strip(summarizeCpuProfile(telesyncProfile)),
      simulator:
        simulatorProfile === undefined ? null : strip(summarizeCpuProfile(simulatorProfile)),
      rows,
      wallMs,
    };
  } finally {
    scratch.remove();
  }
}

/** The summary without the temporary file's path. */
function strip(summary: ProfileSummary): ProfileSummary {
  return { ...summary, file: '(deleted after reading)' };
}
