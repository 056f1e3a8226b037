import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { embeddedPgdata, openPGlite } from '../../src/db/connect.js';
import { chooseTestDatabase, type TestDatabaseTarget } from './choose-test-database.js';

declare module 'vitest' {
  export interface ProvidedContext {
    testDatabase: TestDatabaseTarget;
    /** A data directory whose embedded database is created and empty (see embeddedTemplate). */
    embeddedTemplate: string | undefined;
  }
}

/**
 * Decides once per project which database the tests use, says which, and hands it to the test
 * files through `inject('testDatabase')`. On the embedded database the end-to-end project also gets
 * a template directory (`inject('embeddedTemplate')`).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const chosen = await chooseTestDatabase(process.env);
  console.log(`[telesync tests · ${project.name}] database: ${chosen.target.description}`);
  project.provide('testDatabase', chosen.target);
  const template =
    chosen.target.kind === 'pglite' && project.name === 'e2e'
      ? await embeddedTemplate()
      : undefined;
  project.provide('embeddedTemplate', template);
  return async () => {
    if (template !== undefined) rmSync(template, { recursive: true, force: true });
    await chosen.stop();
  };
}

/**
 * An embedded database created once (PGlite's initdb, seconds of CPU and about a gigabyte at its
 * peak) and closed, with no schema of telesync's: each end-to-end fixture copies it instead of
 * creating its own, and migrates its own schema into the copy as a new user's directory would be.
 */
async function embeddedTemplate(): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'telesync-template-'));
  const pglite = await openPGlite(embeddedPgdata(dataDir));
  await pglite.close();
  return dataDir;
}
