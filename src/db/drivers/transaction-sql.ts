import { CompiledQuery, type TransactionSettings } from 'kysely';

/** The statement that opens a transaction with Kysely's settings (both drivers use it). */
export function beginStatement(settings: TransactionSettings): CompiledQuery {
  const modes = [
    settings.isolationLevel ? `isolation level ${settings.isolationLevel}` : '',
    settings.accessMode ?? '',
  ]
    .filter((mode) => mode !== '')
    .join(' ');
  return CompiledQuery.raw(modes ? `start transaction ${modes}` : 'begin');
}
