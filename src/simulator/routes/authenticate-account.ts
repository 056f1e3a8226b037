import { timingSafeEqual } from 'node:crypto';
import type { AccountState } from '../state/account-state.js';

/**
 * The account that HTTP Basic credentials open (assumptions A1, A33), or why they open none, as
 * the message of the 401. The token is compared in constant time and never echoed.
 */
export function authenticateAccount(
  accounts: ReadonlyMap<string, AccountState>,
  header: string | undefined,
): AccountState | string {
  const match = header === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (match === null) {
    return 'authentication required: send HTTP Basic credentials auth_id:auth_token';
  }
  const decoded = Buffer.from(match[1] ?? '', 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const authId = colon < 0 ? decoded : decoded.slice(0, colon);
  const token = colon < 0 ? '' : decoded.slice(colon + 1);
  const account = accounts.get(authId);
  if (account === undefined || !sameSecret(token, account.authToken)) {
    return 'authentication failed: unknown auth_id or wrong auth_token';
  }
  return account;
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}
