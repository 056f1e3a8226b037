import { createHash } from 'node:crypto';
import { CompiledQuery } from 'kysely';

/**
 * Statements that every loading transaction runs with the same text (the upsert from the staging
 * table). PostgreSQL parses, analyses and plans an unnamed statement each time it runs, about
 * 0.3 ms of the server's CPU for the upsert, as much as a few hundred rows cost it in a small
 * batch. A query made here is sent by the PostgreSQL driver as a named prepared statement, parsed
 * and planned once per session; other drivers run it as any query.
 *
 * Only for statements whose text repeats (no varying lists of values) and whose result columns
 * cannot change while a session lives (no `SELECT *`): PostgreSQL re-plans a prepared statement
 * after its tables change, but refuses one whose result columns changed.
 */
const preparedQueries = new WeakSet<CompiledQuery>();

/** Statement names by text: a hash, so the same text has the same name on every session. */
const namesByText = new Map<string, string>();
/** Texts whose names are kept (one per schema and table in use); past it, they are hashed anew. */
const NAMES_KEPT = 1_000;

/** A query to run as a prepared statement where the driver can (see above). */
export function preparedQuery(sql: string, parameters: readonly unknown[]): CompiledQuery {
  const query = CompiledQuery.raw(sql, [...parameters]);
  preparedQueries.add(query);
  return query;
}

/** The prepared statement's name of a query made by preparedQuery; undefined for any other. */
export function preparedStatementName(query: CompiledQuery): string | undefined {
  if (!preparedQueries.has(query)) return undefined;
  let name = namesByText.get(query.sql);
  if (name === undefined) {
    name = `telesync_${createHash('sha256').update(query.sql).digest('hex').slice(0, 24)}`;
    if (namesByText.size >= NAMES_KEPT) namesByText.clear();
    namesByText.set(query.sql, name);
  }
  return name;
}
