/**
 * TELESYNC_ACCOUNT_CONCURRENCY's automatic value: how many accounts one process works on at once
 * when the setting is `auto` (the default).
 *
 * What limits it. Each account reads under its own request budget, so accounts do not compete for
 * the service: they spend most of their time waiting on their own limiter, and more of them at once
 * is more rows a second, up to the shared limits. Those are the database's write capacity and the
 * CPU, and the process's `LoadGate` already holds them (at most TELESYNC_LOAD_CONNECTIONS
 * transactions at once, a bound on the rows queued behind them): an account beyond what the
 * database can take waits for room in the loader rather than adding sessions or load. What an
 * account in hand does cost is memory (its loader's buffer, up to two batches of rows, and its pages
 * in flight) and, now and then, a database connection. So: every account, within what the
 * process's memory allows at the configured batch size and `maxAccounts` (connections), with no cap
 * for the writer: accounts held back in waves read no faster than their waves' budgets, whatever
 * the writer could take. Beyond that, accounts go in even waves.
 */

/**
 * Memory a process may give its accounts in hand: the 400 MB a fifty-account backfill is held to,
 * less about 150 MB the process holds with one account (modules, pools, the collector's slack).
 */
const ACCOUNTS_MEMORY_BYTES = 250 * 1024 * 1024;
/**
 * A row as an account's loader holds it until it is written (its COPY text and what is kept of the
 * record): about the size of the call's JSON, 0.9 KB, rounded up.
 */
const ROW_BYTES = 1_000;
/** Batches of rows one account's loader holds at most (BatchLoader: two per lane). */
const BATCHES_PER_ACCOUNT = 2;
/** An account's transport, pages in flight and run state besides its rows. */
const ACCOUNT_FIXED_BYTES = 512 * 1024;

export interface AutoAccountConcurrencyInput {
  /** Accounts configured for the process. */
  readonly accounts: number;
  /** TELESYNC_BATCH_SIZE: rows of a batch, what an account's buffer grows with. */
  readonly batchSize: number;
  /** The most the setting allows (database connections: about one per account in hand). */
  readonly maxAccounts: number;
}

/**
 * Accounts at once for `auto`: every account, within memory and `maxAccounts`; at least 1. Pure.
 */
export function autoAccountConcurrency(input: AutoAccountConcurrencyInput): number {
  return Math.max(
    1,
    Math.min(input.accounts, accountsMemoryAllows(input.batchSize), input.maxAccounts),
  );
}

/** Accounts whose rows fit in the memory given to accounts, at `batchSize` rows a batch. */
export function accountsMemoryAllows(batchSize: number): number {
  const perAccount = BATCHES_PER_ACCOUNT * batchSize * ROW_BYTES + ACCOUNT_FIXED_BYTES;
  return Math.max(1, Math.floor(ACCOUNTS_MEMORY_BYTES / perAccount));
}
