import type { Kysely } from 'kysely';

/**
 * A telesync migration. Unlike a bare Kysely migration it receives the schema it must create its
 * objects in (TELESYNC_SCHEMA), so the same files serve any schema name.
 */
export interface SchemaMigration {
  /** Unique and sortable: the order migrations run in. */
  readonly name: string;
  up(db: Kysely<unknown>, schema: string): Promise<void>;
}
