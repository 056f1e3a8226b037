import { initialSchema } from './0001-initial-schema.js';
import { billingViews } from './0002-billing-views.js';
import { columnComments } from './0003-column-comments.js';
import { nullableWireFields } from './0004-nullable-wire-fields.js';
import { streamEvents } from './0005-stream-events.js';
import { ledgerComments } from './0006-ledger-comments.js';
import { loadWait } from './0007-load-wait.js';
import { streamCallbackNonces } from './0008-stream-callback-nonces.js';
import { billedDurationFallback } from './0009-billed-duration-fallback.js';
import { dayVerifications } from './0010-day-verifications.js';
import { trunkCallsRawJson } from './0011-trunk-calls-raw-json.js';
import type { SchemaMigration } from './migration-types.js';

/**
 * Every migration, in order. Listed here rather than discovered on disk so that they are bundled
 * with the code (tsx, the compiled dist/ and the Docker image alike).
 */
export const MIGRATIONS: readonly SchemaMigration[] = [
  initialSchema,
  billingViews,
  columnComments,
  nullableWireFields,
  streamEvents,
  ledgerComments,
  loadWait,
  streamCallbackNonces,
  billedDurationFallback,
  dayVerifications,
  trunkCallsRawJson,
];
