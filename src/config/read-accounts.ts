import type { ConfigProblem } from './config-errors.js';
import type { FileAccount } from './config-sources.js';
import type { AccountConfig } from './config-types.js';
import type { EnvReader } from './env-reader.js';

/**
 * Accounts: TELESYNC_AUTH_ID/TELESYNC_AUTH_TOKEN name one, the config file's `accounts` more. A
 * file entry may name its token through another variable (`auth_token_env`) so the file holds no
 * secret. Problems name the variable or the file entry, never a token.
 */
export function readAccounts(
  reader: EnvReader,
  fileAccounts: readonly FileAccount[],
  problems: ConfigProblem[],
): AccountConfig[] {
  const accounts: AccountConfig[] = [];
  const add = (authId: string, authToken: string, key: string): void => {
    if (!/^[A-Za-z0-9_-]+$/.test(authId)) {
      problems.push({
        key,
        message: `auth_id "${authId}" may hold only letters, digits, "_" and "-" (it becomes a path segment)`,
      });
    } else if (accounts.some((account) => account.authId === authId)) {
      problems.push({ key, message: `account ${authId} is configured twice` });
    } else {
      accounts.push({ authId, authToken });
    }
  };

  const authId = reader.optionalString('TELESYNC_AUTH_ID');
  const authToken = reader.optionalString('TELESYNC_AUTH_TOKEN');
  if (authId !== undefined && authToken === undefined) {
    reader.problem('TELESYNC_AUTH_TOKEN', 'is not set, but TELESYNC_AUTH_ID is');
  } else if (authId === undefined && authToken !== undefined) {
    reader.problem('TELESYNC_AUTH_ID', 'is not set, but TELESYNC_AUTH_TOKEN is');
  } else if (authId !== undefined && authToken !== undefined) {
    add(authId, authToken, 'TELESYNC_AUTH_ID');
  }

  for (const entry of fileAccounts) {
    if (typeof entry.authId !== 'string' || entry.authId === '') {
      problems.push({ key: entry.where, message: 'needs "auth_id" (text)' });
      continue;
    }
    let token: string | undefined;
    if (typeof entry.tokenEnv === 'string') {
      token = reader.optionalString(entry.tokenEnv);
      if (token === undefined) {
        problems.push({
          key: entry.where,
          message: `auth_token_env names ${entry.tokenEnv}, which is not set`,
        });
        continue;
      }
    } else if (typeof entry.authToken === 'string' && entry.authToken !== '') {
      token = entry.authToken;
    } else {
      problems.push({
        key: entry.where,
        message:
          'needs "auth_token" or "auth_token_env" (the name of a variable holding the token)',
      });
      continue;
    }
    add(entry.authId, token, entry.where);
  }
  return accounts;
}
