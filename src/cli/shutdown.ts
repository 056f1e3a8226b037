/**
 * SIGINT/SIGTERM as an AbortSignal: the first signal asks the work in hand to stop after its
 * current batch; a second one exits at once (the database keeps only committed work, so even that
 * loses nothing but the batch in hand).
 */
export function onShutdownSignal(onFirst: () => void): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const handler = (signal: NodeJS.Signals): void => {
    if (controller.signal.aborted) {
      process.exit(signal === 'SIGINT' ? 130 : 143);
    }
    onFirst();
    controller.abort(new Error(`received ${signal}`));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}
