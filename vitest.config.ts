import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

const databaseSetup = ['test/support/global-setup.ts'];

export default defineConfig({
  test: {
    // A stray `.only` must not silently skip the rest of the suite in CI.
    allowOnly: !process.env.CI,
    // The database and end-to-end files mostly wait on child processes, timers and the database:
    // three files at once shorten the run even on two cores, where vitest's default (cores - 1)
    // runs one at a time. VITEST_MAX_WORKERS or --maxWorkers overrides it.
    maxWorkers: Math.max(3, availableParallelism() - 1),
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: databaseSetup,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: databaseSetup,
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
