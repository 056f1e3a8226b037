import type { Command } from 'commander';
import { createVerifyDependencies } from '../app/app-services.js';
import {
  findVerifiedTotals,
  type VerificationSummary,
} from '../db/repositories/day-verifications-repository.js';
import type { SyncSession } from '../app/command-app.js';
import { utcDayStart, type ComparedDay } from '../domain/verify-days.js';
import {
  planVerifyDays,
  repairOutcome,
  retrievableRange,
  verifyTrunkCalls,
  type AccountVerification,
  type RepairOutcome,
  type VerifyDependencies,
} from '../sync/verify-trunk-calls.js';
import { TRUNK_HISTORY_DAYS } from '../domain/service-rules.js';
import { type TimeWindow } from '../sync/window-planner.js';
import {
  epochMicrosFromMillis,
  fixIsoText,
  formatIsoFixed,
  formatIsoMicros,
  MICROS_PER_DAY,
  type EpochMicros,
} from '../util/micros.js';
import type { CommandContext } from './command-context.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import { writeNotice } from './notice.js';
import { INSTANT_FORMS, parseUserInstant, parseWholeNumber } from './user-input.js';

interface VerifyOptions {
  days?: string;
  from?: string;
  to?: string;
  account?: string;
  json?: boolean;
  repair?: boolean;
}

const number = new Intl.NumberFormat('en-US');

export function registerVerifyCommand(program: Command, context: CommandContext): void {
  program
    .command('verify')
    .description(
      "prove the trunk_calls tables: each UTC day's service count beside the rows stored",
    )
    .option('--days <n>', `the last n UTC days, today included, 1 to ${TRUNK_HISTORY_DAYS + 1}`)
    .option('--from <time>', `first day to verify (${INSTANT_FORMS})`)
    .option('--to <time>', 'end of the range, exclusive (default: now)')
    .option('--account <auth_id>', 'only this configured account')
    .option('--json', 'print every day with its counts, amount and billed seconds, as JSON')
    .option('--repair', 're-read the days that differ (as a backfill does), then verify them again')
    .addHelpText(
      'after',
      `\nOne request (limit 1) per day and account. The oldest day is compared from the ${TRUNK_HISTORY_DAYS}-day cut-off on,\n` +
        'the newest up to the settle lag. Exit 0: every day agrees; 1: a day differs (named) or a check\n' +
        'failed; 2: bad usage. Findings are kept in the table day_verifications.\n\n' +
        'Examples:\n  $ telesync verify\n  $ telesync verify --days 7 --json\n  $ telesync verify --from 2026-10-01 --to 2026-10-08 --repair',
    )
    .action(async (options: VerifyOptions) => {
      context.setExit(await runVerify(context, options));
    });
}

/** The range the flags name; the whole retrievable range by default. */
export function verifyRange(options: VerifyOptions, now: EpochMicros): TimeWindow {
  if (options.days !== undefined) {
    if (options.from !== undefined || options.to !== undefined)
      throw new UsageError('give either --days or --from/--to, not both');
    const days = parseWholeNumber(options.days, '--days', 1, TRUNK_HISTORY_DAYS + 1);
    return { start: utcDayStart(now) - (days - 1) * MICROS_PER_DAY, end: now };
  }
  if (options.from === undefined) {
    if (options.to !== undefined) throw new UsageError('--to needs --from');
    return retrievableRange(now);
  }
  const start = parseUserInstant(options.from, '--from');
  const end = options.to === undefined ? now : parseUserInstant(options.to, '--to');
  if (end <= start)
    throw new UsageError(
      `--to (${formatIsoMicros(end)}) must be after --from (${formatIsoMicros(start)})`,
    );
  return { start, end };
}

async function runVerify(context: CommandContext, options: VerifyOptions): Promise<ExitCode> {
  const now = epochMicrosFromMillis(Date.now());
  const range = verifyRange(options, now);
  const app = context.app('verify');
  const accounts = app.selectAccounts(options.account);
  const days = planVerifyDays(now, range, app.config.sync);
  if (days.length === 0)
    throw new UsageError(
      `${formatIsoMicros(range.start)} to ${formatIsoMicros(range.end)} holds no day the service still counts: ` +
        `it is older than the ${TRUNK_HISTORY_DAYS}-day cut-off or newer than the settle lag`,
    );
  return app.withSync(accounts, async (session) => {
    const deps = createVerifyDependencies(app.config, session.database, app.log);
    const outcomes = await session.forEachAccount((client) =>
      verifyAccount(session, deps, client, days, options.repair === true),
    );
    let exit: ExitCode = EXIT.OK;
    for (const outcome of outcomes) {
      report(context, outcome, options.json === true);
      const { status, days: found } = outcome.verification;
      const differs = found.some((day) => day.result === 'differs');
      if (status !== 'verified' || differs || outcome.repairErrors.length > 0) exit = EXIT.FAILED;
    }
    return exit;
  });
}

interface AccountOutcome {
  readonly verification: AccountVerification;
  /** With --repair: what the first verification found, and what the repair did. */
  readonly repair?: { readonly before: AccountVerification; readonly outcome: RepairOutcome };
  /** Days whose repair could not run (their backfill failed or was skipped), with why. */
  readonly repairErrors: readonly string[];
}

/**
 * Verifies one account; with `repair`, re-reads each differing day through the backfill path
 * (its lock, its ledger) and verifies those days again.
 */
async function verifyAccount(
  session: SyncSession,
  deps: VerifyDependencies,
  client: SyncSession['clients'][number],
  days: readonly ComparedDay[],
  repair: boolean,
): Promise<AccountOutcome> {
  const first = await verifyTrunkCalls(deps, client, days);
  const differing = first.days.filter((day) => day.result === 'differs');
  if (!repair || first.status !== 'verified' || differing.length === 0)
    return { verification: first, repairErrors: [] };
  const repairErrors: string[] = [];
  for (const day of differing) {
    const result = await session.runStream(client, {
      stream: 'trunk_calls',
      command: 'verify --repair',
      backfill: { start: day.start, end: day.end },
      lockWaitMs: 0,
    });
    if (result.status !== 'succeeded')
      repairErrors.push(`${day.day}: ${result.error ?? result.status}`);
  }
  const again = await verifyTrunkCalls(
    deps,
    client,
    differing.map((day) => ({ day: day.day, start: day.start, end: day.end })),
  );
  if (again.status !== 'verified') return { verification: again, repairErrors };
  const after = new Map(again.days.map((day) => [day.day, day]));
  const merged = first.days.map((day) => after.get(day.day) ?? day);
  // Read again: the repaired days' rows changed.
  const totals = await findVerifiedTotals(
    session.database.db,
    client.authId,
    merged.map((day) => day.day),
  );
  const verification: AccountVerification = {
    ...first,
    verifiedAt: again.verifiedAt,
    days: merged,
    totals,
  };
  return {
    verification,
    repair: { before: first, outcome: repairOutcome(differing, again.days) },
    repairErrors,
  };
}

function report(context: CommandContext, outcome: AccountOutcome, json: boolean): void {
  const { verification: v } = outcome;
  const differing = v.days.filter((day) => day.result === 'differs');
  if (json) {
    context.io.out(
      JSON.stringify({
        account_id: v.accountId,
        status: v.status,
        ...(v.error === undefined ? {} : { error: v.error }),
        verified_at: formatIsoFixed(v.verifiedAt),
        days_verified: v.days.length,
        days_agree: v.days.length - differing.length,
        days_differ: differing.length,
        differing_days: differing.map((day) => day.day),
        calls: v.totals.calls,
        stored_amount: v.totals.amount,
        billed_seconds: v.totals.billedSeconds,
        ...(outcome.repair === undefined
          ? {}
          : {
              repair: {
                days: outcome.repair.before.days
                  .filter((day) => day.result === 'differs')
                  .map((day) => day.day),
                rows_added: outcome.repair.outcome.rowsAdded,
                rows_no_longer_listed: outcome.repair.outcome.noLongerListed,
                still_differing: outcome.repair.outcome.stillDiffering,
                errors: outcome.repairErrors,
              },
            }),
        days: v.days.map((day) => ({
          day: day.day,
          from: formatIsoFixed(day.start),
          to: formatIsoFixed(day.end),
          service_count: day.serviceCount,
          stored_count: day.storedCount,
          difference: day.storedCount - day.serviceCount,
          stored_amount: day.storedAmount,
          billed_seconds: day.billedSeconds,
          result: day.result,
        })),
      }),
    );
    return;
  }
  if (v.status !== 'verified') {
    writeNotice(context.io, 'error', `verify of ${v.accountId} ${v.status}: ${v.error ?? ''}`);
    return;
  }
  const repaired = outcome.repair;
  if (repaired !== undefined) {
    for (const day of repaired.before.days.filter((d) => d.result === 'differs'))
      context.io.out(`${v.accountId} ${dayLine(day)} (before --repair)`);
    const { rowsAdded, noLongerListed } = repaired.outcome;
    context.io.out(
      `${v.accountId} repair: ${number.format(rowsAdded)} rows added` +
        (noLongerListed > 0
          ? `; ${number.format(noLongerListed)} rows stored that the service no longer lists (kept, not deleted)`
          : ''),
    );
    for (const error of outcome.repairErrors)
      writeNotice(context.io, 'error', `repair of ${v.accountId} ${error}`);
  }
  for (const day of differing) context.io.out(`${v.accountId} ${dayLine(day)}`);
  context.io.out(
    `${v.accountId}: ${number.format(v.days.length)} days verified, ${number.format(v.days.length - differing.length)} agree: ` +
      `${number.format(v.totals.calls)} calls, ${v.totals.amount} billed, checked ${formatIsoFixed(v.verifiedAt).replace(/\.\d+Z$/, 'Z')}`,
  );
}

/** `2026-11-20: service 412, stored 410, difference -2`. */
function dayLine(day: AccountVerification['days'][number]): string {
  const difference = day.storedCount - day.serviceCount;
  return `${day.day}: service ${number.format(day.serviceCount)}, stored ${number.format(day.storedCount)}, difference ${difference > 0 ? '+' : ''}${number.format(difference)}`;
}

/**
 * One line of what the last verification of an account found, for `status` and `state show`:
 * `verified 2026-11-28T06:00:12Z: 91 days, 90 agree; differing: 2026-11-18`.
 */
export function formatVerificationLine(summary: VerificationSummary): string {
  if (summary.lastVerifiedAt === null)
    return 'not verified yet (telesync verify compares each day with the service)';
  const days = summary.agree + summary.differs;
  const differing =
    summary.differs === 0
      ? ''
      : `; differing: ${summary.differingDays.join(', ')} (telesync verify --repair)`;
  return `verified ${fixIsoText(summary.lastVerifiedAt) ?? summary.lastVerifiedAt}: ${number.format(days)} days, ${number.format(summary.agree)} agree${differing}`;
}

/** The same, for --json. */
export function verificationJson(summary: VerificationSummary): Record<string, unknown> {
  return {
    account: summary.accountId,
    last_verified_at: fixIsoText(summary.lastVerifiedAt),
    days_agree: summary.agree,
    days_differ: summary.differs,
    differing_days: summary.differingDays,
  };
}
