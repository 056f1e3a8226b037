import { redactUrl } from '../../src/util/redact.js';

/** Where the database tests run; serialisable, handed to each test file. */
export type TestDatabaseTarget =
  { kind: 'postgres'; url: string; description: string } | { kind: 'pglite'; description: string };

export interface ChosenTestDatabase {
  target: TestDatabaseTarget;
  stop: () => Promise<void>;
}

const RUNTIME_PROBE_MS = 4_000;

/**
 * In order: `TEST_DATABASE_URL` when set; else a PostgreSQL container when a container runtime
 * answers (probed for a few seconds, no long hang); else embedded PGlite.
 * `TEST_DATABASE=pglite` forces PGlite (CI's second pass proves the embedded path).
 */
export async function chooseTestDatabase(
  env: Readonly<Record<string, string | undefined>>,
): Promise<ChosenTestDatabase> {
  const noop = async (): Promise<void> => {};
  if (env.TEST_DATABASE === 'pglite') {
    return {
      target: { kind: 'pglite', description: 'embedded PGlite (forced by TEST_DATABASE=pglite)' },
      stop: noop,
    };
  }
  if (env.TEST_DATABASE_URL) {
    const url = env.TEST_DATABASE_URL;
    return {
      target: {
        kind: 'postgres',
        url,
        description: `PostgreSQL from TEST_DATABASE_URL (${redactUrl(url)})`,
      },
      stop: noop,
    };
  }
  const container = await startContainerIfRuntime();
  if (container !== undefined) return container;
  return {
    target: {
      kind: 'pglite',
      description: 'embedded PGlite (no TEST_DATABASE_URL and no container runtime)',
    },
    stop: noop,
  };
}

async function startContainerIfRuntime(): Promise<ChosenTestDatabase | undefined> {
  const { getContainerRuntimeClient } = await import('testcontainers');
  const probe = getContainerRuntimeClient().then(
    () => true,
    () => false,
  );
  const timer = new Promise<boolean>((resolve) =>
    setTimeout(() => resolve(false), RUNTIME_PROBE_MS).unref(),
  );
  if (!(await Promise.race([probe, timer]))) return undefined;

  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:16-alpine').start();
  const url = container.getConnectionUri();
  return {
    target: {
      kind: 'postgres',
      url,
      description: `PostgreSQL 16 in a container (${redactUrl(url)})`,
    },
    stop: async () => {
      await container.stop();
    },
  };
}
