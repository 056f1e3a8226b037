/**
 * `work`, or a rejection once `timeoutMs` has passed: "`what` did not answer within N ms". The work
 * itself goes on (a query cannot be taken back); only the caller stops waiting, so a hung database
 * cannot hang /healthz.
 */
export function withTimeout<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    timer.unref();
  });
  // A late rejection of the abandoned work must not become an unhandled rejection.
  work.catch(() => undefined);
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
