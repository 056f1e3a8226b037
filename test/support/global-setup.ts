import type { TestProject } from 'vitest/node';
import { chooseTestDatabase, type TestDatabaseTarget } from './choose-test-database.js';

declare module 'vitest' {
  export interface ProvidedContext {
    testDatabase: TestDatabaseTarget;
  }
}

/**
 * Decides once per project which database the tests use, says which, and hands it to the test
 * files through `inject('testDatabase')`.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const chosen = await chooseTestDatabase(process.env);
  console.log(`[telesync tests · ${project.name}] database: ${chosen.target.description}`);
  project.provide('testDatabase', chosen.target);
  return chosen.stop;
}
