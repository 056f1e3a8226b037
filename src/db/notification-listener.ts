import { sql, type Kysely } from 'kysely';
import pg from 'pg';

/**
 * LISTEN on one channel over a connection of its own (a pooled connection would be handed to
 * other statements). A lost connection is opened again after `reconnectMs`, and `onNotify` is
 * then called once: what was sent while it was down is not delivered, so the listener treats the
 * reconnection as a notification.
 */
export interface NotificationListener {
  close(): Promise<void>;
}

export async function listenForNotifications(options: {
  readonly connectionString: string;
  readonly channel: string;
  readonly onNotify: () => void;
  readonly onError: (error: Error) => void;
  readonly reconnectMs: number;
}): Promise<NotificationListener> {
  let closed = false;
  let client: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const next = new pg.Client({
      connectionString: options.connectionString,
      application_name: 'telesync worker (job notifications)',
      keepAlive: true,
    });
    const lost = (error?: Error): void => {
      if (client !== next) return;
      client = undefined;
      next.removeAllListeners();
      next.on('error', () => undefined);
      void next.end().catch(() => undefined);
      if (closed) return;
      if (error !== undefined) options.onError(error);
      timer = setTimeout(() => void reconnect(), options.reconnectMs);
      timer.unref();
    };
    next.on('error', lost);
    next.on('end', () => lost(new Error('the job notification connection ended')));
    next.on('notification', () => options.onNotify());
    client = next;
    await next.connect();
    await next.query(`LISTEN ${pg.escapeIdentifier(options.channel)}`);
  };
  const reconnect = async (): Promise<void> => {
    if (closed) return;
    try {
      await connect();
      options.onNotify();
    } catch (error) {
      const cause = error instanceof Error ? error : new Error(String(error));
      if (client !== undefined) client.emit('error', cause);
      else options.onError(cause);
    }
  };

  await connect();
  return {
    async close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      const open = client;
      client = undefined;
      await open?.end().catch(() => undefined);
    },
  };
}

/** Wakes every listener of `channel` (after the transaction that calls it commits, if any). */
export async function notifyChannel(root: Kysely<unknown>, channel: string): Promise<void> {
  await sql`SELECT pg_notify(${channel}, '')`.execute(root);
}
