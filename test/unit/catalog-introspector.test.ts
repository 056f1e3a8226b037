import type { DatabaseIntrospector, TableMetadata } from 'kysely';
import { describe, expect, it } from 'vitest';
import { CatalogIntrospector } from '../../src/db/drivers/catalog-introspector.js';

const TABLES: TableMetadata[] = [
  { name: 'schema_migrations', schema: 't1', isView: false, isForeign: false, columns: [] },
];

/** An introspector whose first reads fail as the given errors, then answer TABLES. */
function failingFirst(errors: Error[]): {
  introspector: DatabaseIntrospector;
  reads: () => number;
} {
  let reads = 0;
  const read = (): Promise<TableMetadata[]> => {
    const error = errors[reads++];
    return error === undefined ? Promise.resolve(TABLES) : Promise.reject(error);
  };
  return {
    introspector: {
      getSchemas: () => read().then(() => [{ name: 't1' }]),
      getTables: read,
    },
    reads: () => reads,
  };
}

const dropped = (code: string) =>
  Object.assign(new Error('schema "t_x_jobs" does not exist'), { code });

describe('CatalogIntrospector', () => {
  it('reads again when a schema or table was dropped under the read', async () => {
    const inner = failingFirst([dropped('3F000'), dropped('42P01')]);
    expect(await new CatalogIntrospector(inner.introspector).getTables()).toEqual(TABLES);
    expect(inner.reads()).toBe(3);
  });

  it('throws any other error at once, and a moved catalog after five reads', async () => {
    const other = failingFirst([Object.assign(new Error('permission denied'), { code: '42501' })]);
    await expect(new CatalogIntrospector(other.introspector).getTables()).rejects.toThrow(
      'permission denied',
    );
    expect(other.reads()).toBe(1);
    const moving = failingFirst(Array.from({ length: 9 }, () => dropped('3F000')));
    await expect(new CatalogIntrospector(moving.introspector).getSchemas()).rejects.toThrow(
      'does not exist',
    );
    expect(moving.reads()).toBe(5);
  });
});
