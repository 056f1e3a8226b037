import type {
  DatabaseIntrospector,
  DatabaseMetadataOptions,
  SchemaMetadata,
  TableMetadata,
} from 'kysely';

/**
 * Kysely's PostgreSQL introspector (which its migrator uses to see whether its own tables exist),
 * read again when the catalog changed under it. It lists every table of the database and looks
 * schemas and tables up by name as it goes, so a schema or table dropped meanwhile by another
 * session (another telesync schema dropped, a test's, pg-boss creating and dropping a queue's
 * partition) fails the read with "schema … does not exist" or "relation … does not exist",
 * though nothing is wrong with ours.
 */
export class CatalogIntrospector implements DatabaseIntrospector {
  constructor(private readonly inner: DatabaseIntrospector) {}

  getSchemas(): Promise<SchemaMetadata[]> {
    return readAgainIfMoved(() => this.inner.getSchemas());
  }

  getTables(options?: DatabaseMetadataOptions): Promise<TableMetadata[]> {
    return readAgainIfMoved(() => this.inner.getTables(options));
  }
}

/** invalid_schema_name, undefined_table: what a name looked up after its drop answers. */
const MOVED_CATALOG_CODES = new Set(['3F000', '42P01']);
const READS = 5;

async function readAgainIfMoved<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (attempt >= READS || typeof code !== 'string' || !MOVED_CATALOG_CODES.has(code)) {
        throw error;
      }
    }
  }
}
