import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../migrations/index.js';
import { redactUrl } from '../../src/util/redact.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { runTelesync } from '../support/run-telesync.js';

/** What a command says of a database with no migration applied. */
const pending = () =>
  `${MIGRATIONS.length} migrations pending: ${MIGRATIONS[0]!.name}, ${MIGRATIONS[1]!.name} and ${MIGRATIONS.length - 2} more`;

/** A database alone, left empty: migrating it is what this file tests. */
const cli = useCliFixture({ migrate: false });

describe(`telesync migrate (${cli.target.description})`, () => {
  it('is asked for, in one line and exit 2, by every command that uses the tables before it ran', async () => {
    // An account and a service address that answers nothing: a command that went ahead anyway
    // would fail its runs (exit 1) rather than refuse (exit 2).
    const env = {
      ...cli.database.env,
      TELESYNC_AUTH_ID: 'MA_E2E_UNMIGRATED',
      TELESYNC_AUTH_TOKEN: 'unmigrated-token',
      TELESYNC_BASE_URL: 'http://127.0.0.1:9',
    };
    const location =
      cli.target.kind === 'postgres'
        ? redactUrl(cli.target.url)
        : resolve(cli.database.env.TELESYNC_DATA_DIR!);
    for (const args of [
      ['sync'],
      ['sync', 'trunk_calls', '--dry-run'],
      ['backfill', '--days', '1'],
      ['lookup', 'messages', '00000000-0000-4000-8000-000000000000'],
      ['state', 'show'],
      ['status'],
      ['status', '--json'],
    ]) {
      const result = await runTelesync(args, env);
      expect({ args, code: result.code, stdout: result.stdout }).toEqual({
        args,
        code: 2,
        stdout: '',
      });
      // Plain text, as every exit-2 message is.
      expect(result.stderr).toBe(
        `The schema "${cli.database.env.TELESYNC_SCHEMA}" at ${location} is not ` +
          `migrated (${pending()}). Run telesync migrate first.\n`,
      );
      expect(result.stderr).not.toContain('unmigrated-token');
    }
  });

  it.skipIf(cli.target.kind !== 'pglite')(
    'is asked for at once of an embedded directory never used, which is left as it was',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'telesync-never-used-'));
      try {
        const env = {
          TELESYNC_DATA_DIR: dataDir,
          TELESYNC_AUTH_ID: 'MA_E2E_UNMIGRATED',
          TELESYNC_AUTH_TOKEN: 'unmigrated-token',
          TELESYNC_BASE_URL: 'http://127.0.0.1:9',
        };
        for (const args of [['sync'], ['backfill', '--days', '1'], ['state', 'show'], ['status']]) {
          const result = await runTelesync(args, env);
          expect({ args, code: result.code, stderr: result.stderr }).toEqual({
            args,
            code: 2,
            stderr:
              `The schema "telephony" at ${dataDir} is not migrated (${pending()}). ` +
              'Run telesync migrate first.\n',
          });
        }
        // Not created only to be found empty: PostgreSQL's initdb costs seconds and a gigabyte.
        expect(readdirSync(dataDir)).toEqual([]);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );

  it('applies the migrations, then finds nothing to apply, and --status lists them', async () => {
    const first = await runTelesync(['migrate'], cli.database.env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^applied {2}0001-initial-schema$/m);

    const second = await runTelesync(['migrate'], cli.database.env);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/up to date; nothing to apply/);
    expect(second.stdout).not.toMatch(/^applied /m);

    const status = await runTelesync(['migrate', '--status'], cli.database.env);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^applied {2}0001-initial-schema {2}\(\d{4}-\d\d-\d\dT/m);
    expect(status.stdout).toContain(`${MIGRATIONS.length} applied, 0 pending`);
    for (const migration of MIGRATIONS)
      expect(first.stdout).toContain(`applied  ${migration.name}`);

    const tables = await cli.database.inspect((database) =>
      database.db.selectFrom('sync_runs').select('id').execute(),
    );
    expect(tables).toEqual([]);
  });
});

describe(`two telesync migrate at once on a fresh database (${cli.target.description})`, () => {
  it.runIf(cli.target.kind === 'postgres')(
    'both succeed, ten rounds out of ten, and the schema is migrated once',
    async () => {
      const outcomes: string[] = [];
      for (let round = 0; round < 10; round++) {
        const database = await cli.addDatabase();
        const both = await Promise.all([
          runTelesync(['migrate'], database.env),
          runTelesync(['migrate'], database.env),
        ]);
        outcomes.push(
          both
            .map((result) => (result.code === 0 ? 'ok' : `exit ${result.code}: ${result.stderr}`))
            .join(' | '),
        );
        // Every migration applied by exactly one of the two.
        const applied = both.flatMap((result) => result.stdout.match(/^applied {2}\S+$/gm) ?? []);
        expect(applied.sort()).toEqual(
          MIGRATIONS.map((migration) => `applied  ${migration.name}`).sort(),
        );
      }
      expect(outcomes).toEqual(Array.from({ length: 10 }, () => 'ok | ok'));
    },
    300_000,
  );
});

describe('bad configuration exits 2 and names what to fix', () => {
  it('lists every problem at once', async () => {
    const result = await runTelesync(['migrate'], {
      DATABASE_URL: 'mysql://root@localhost/x',
      TELESYNC_SCHEMA: 'Bad-Name',
      TELESYNC_MAX_RPS: 'fast',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/DATABASE_URL: expected a PostgreSQL URL/);
    expect(result.stderr).toMatch(
      /TELESYNC_SCHEMA: "Bad-Name" is not a plain lower-case identifier/,
    );
    expect(result.stderr).toMatch(/TELESYNC_MAX_RPS: "fast" is not a number/);
  });

  it('an unknown command exits 2 with a pointer to --help', async () => {
    const result = await runTelesync(['migrat']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/unknown command 'migrat'/);
    expect(result.stderr).toMatch(/--help/);
  });

  it('--help works with no configuration at all and exits 0', async () => {
    const result = await runTelesync(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Usage: telesync/);
    expect(result.stdout).toMatch(/migrate/);
  });
});
