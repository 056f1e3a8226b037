import { createServer } from 'node:net';

/**
 * Polls `probe` every `intervalMs` until it returns something other than false/undefined, and
 * returns that; rejects after `timeoutMs` with `what` and the last value seen.
 */
export async function waitFor<T>(
  probe: () => T | false | undefined | Promise<T | false | undefined>,
  options: { timeoutMs?: number; intervalMs?: number; what: string },
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== false && value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${options.what}${lastError === undefined ? '' : ` (last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)})`}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
}

/** A TCP port free on 127.0.0.1 right now (the kernel picks it; it is released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
