import { sql, type Kysely } from 'kysely';
import { Migrator, type Migration, type MigrationProvider } from 'kysely/migration';
import { MIGRATIONS } from '../../migrations/index.js';
import type { SchemaMigration } from '../../migrations/migration-types.js';
import { advisoryLockKey } from './advisory-lock.js';
import type { Database } from './connect.js';
import { qualifiedName } from './identifiers.js';

/** Kysely's bookkeeping tables live in telesync's schema, under these names. */
export const MIGRATION_TABLE = 'schema_migrations';
export const MIGRATION_LOCK_TABLE = 'schema_migrations_lock';

/** A migration that failed, with the error the database gave. */
export class MigrationError extends Error {
  override name = 'MigrationError';
  constructor(
    readonly migration: string,
    cause: unknown,
  ) {
    super(
      `migration ${migration} failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      {
        cause,
      },
    );
  }
}

export interface MigrationStatus {
  name: string;
  /** When it was applied; undefined while pending. */
  executedAt: string | undefined;
}

function providerFor(schema: string, migrations: readonly SchemaMigration[]): MigrationProvider {
  return {
    getMigrations: () => {
      const byName: Record<string, Migration> = {};
      for (const migration of migrations) {
        byName[migration.name] = { up: (db) => migration.up(db, schema) };
      }
      return Promise.resolve(byName);
    },
  };
}

function createMigrator(
  root: Kysely<unknown>,
  schema: string,
  migrations: readonly SchemaMigration[],
): Migrator {
  return new Migrator({
    db: root,
    provider: providerFor(schema, migrations),
    migrationTableSchema: schema,
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
  });
}

/** What else a migration does while it holds the lock (the job queue's schema, say). */
export type WhileMigrating = (locked: Kysely<unknown>) => Promise<void>;

/**
 * Applies every pending migration, in order, each in its own transaction, then runs `also` (when
 * given) under the same lock. Returns the names it applied: empty when the schema was already
 * current.
 *
 * Everything happens under one session advisory lock of the schema, on one connection, taken
 * before anything is created: the migrator's own lock covers its migrations but not the creation
 * of the schema and of its bookkeeping tables, and two processes that create the same table at
 * once collide in the catalog (`pg_type_typname_nsp_index`). The compose file starts several
 * replicas that migrate.
 */
export async function migrateToLatest(
  database: Database,
  migrations: readonly SchemaMigration[] = MIGRATIONS,
  also?: WhileMigrating,
): Promise<string[]> {
  const key = advisoryLockKey(`telesync migrate ${database.schema}`);
  return database.root.connection().execute(async (locked) => {
    await sql`SELECT pg_advisory_lock(${key}::bigint)`.execute(locked);
    try {
      // The migrator keeps its own tables in the schema, so the schema must exist before it starts.
      await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(database.schema)}`.execute(locked);
      const { error, results = [] } = await createMigrator(
        locked,
        database.schema,
        migrations,
      ).migrateToLatest();
      if (error !== undefined) {
        const failed = results.find((result) => result.status === 'Error');
        throw new MigrationError(failed?.migrationName ?? 'setup', error);
      }
      await also?.(locked);
      return results
        .filter((result) => result.status === 'Success')
        .map((result) => result.migrationName);
    } finally {
      await sql`SELECT pg_advisory_unlock(${key}::bigint)`.execute(locked);
    }
  });
}

/** The migrations not yet applied to the database's schema, oldest first. */
export async function pendingMigrations(database: Database): Promise<MigrationStatus[]> {
  return (await listMigrationStatus(database)).filter(
    (migration) => migration.executedAt === undefined,
  );
}

/** The names of every known migration, oldest first: what a database never migrated lacks. */
export function knownMigrationNames(): string[] {
  return MIGRATIONS.map((migration) => migration.name);
}

/** Every known migration with the time it was applied, or undefined when pending. */
export async function listMigrationStatus(
  database: Database,
  migrations: readonly SchemaMigration[] = MIGRATIONS,
): Promise<MigrationStatus[]> {
  const exists = await sql<{ present: boolean }>`
    SELECT to_regclass(${qualifiedName(database.schema, MIGRATION_TABLE)}) IS NOT NULL AS present
  `.execute(database.root);
  if (exists.rows[0]?.present !== true) {
    return migrations.map((migration) => ({ name: migration.name, executedAt: undefined }));
  }
  const applied = await createMigrator(database.root, database.schema, migrations).getMigrations();
  return applied.map((info) => ({
    name: info.name,
    executedAt: info.executedAt?.toISOString(),
  }));
}
