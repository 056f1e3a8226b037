import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

const databaseSetup = ['test/support/global-setup.ts'];

export default defineConfig({
  test: {
    // A stray `.only` must not silently skip the rest of the suite in CI.
    allowOnly: !process.env.CI,
    // At least two files at once (Vitest's default is a core less than the machine has): the
    // integration and end-to-end files wait on child processes, sockets and timers more than on a
    // core, and on 2 cores two at once take 40% less time than one (docs/performance.md, "The test
    // suite in CI").
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // Pure logic (docs/contributing.md): nothing to isolate, and a fresh module graph per
          // file cost more than the tests themselves (34 s against 9 s on 2 cores).
          isolate: false,
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
