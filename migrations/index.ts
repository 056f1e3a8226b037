import { initialSchema } from './0001-initial-schema.js';
import { billingViews } from './0002-billing-views.js';
import type { SchemaMigration } from './migration-types.js';

/**
 * Every migration, in order. Listed here rather than discovered on disk so that they are bundled
 * with the code (tsx, the compiled dist/ and the Docker image alike).
 */
export const MIGRATIONS: readonly SchemaMigration[] = [initialSchema, billingViews];
