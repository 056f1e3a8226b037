import { MESSAGES } from '../../db/table-specs.js';
import { MESSAGE_REFS } from '../../db/repositories/lookup-queue-repository.js';
import { normalizeMessage } from '../../normalize/normalize-message.js';
import { lookupStream } from './lookups.js';

/** The messages queued in message_refs, fetched by UUID. */
export const MESSAGES_STREAM = lookupStream({
  name: 'messages',
  description: 'message detail records queued in message_refs',
  table: MESSAGES,
  defaultSchedule: '*/5 * * * *',
  queue: MESSAGE_REFS,
  // Stored messages name the sender packs they used.
  feeds: ['powerpacks'],
  noun: 'message',
  fetch: async (run, key, options) => [await run.client.getMessage(key, options)],
  normalize: normalizeMessage,
});
