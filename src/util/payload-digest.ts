import { createHash } from 'node:crypto';

/**
 * The identity of a record's bytes (SHA-256, hex): the quarantine's key for a bad record, and the
 * identity of a record whose own key could not be read.
 */
export function payloadDigest(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
