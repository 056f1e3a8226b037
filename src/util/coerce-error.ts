/**
 * Turns anything thrown into an `Error`, once, at the edge where it is caught (a run, a command).
 * Library code throws real errors; this only guards against third-party code that throws values.
 */
export function coerceError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  if (typeof thrown === 'string') return new Error(thrown);
  try {
    return new Error(`non-error thrown: ${JSON.stringify(thrown)}`);
  } catch {
    return new Error(`non-error thrown: ${String(thrown)}`);
  }
}

/** An error and its causes, outermost first, at most five deep. */
export function errorChain(error: unknown): Error[] {
  const chain: Error[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    const e = coerceError(current);
    chain.push(e);
    current = e.cause;
  }
  return chain;
}

/** The message of an error and of its causes, joined: "a: b: c". */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  for (const e of errorChain(error)) if (!parts.includes(e.message)) parts.push(e.message);
  return parts.join(': ');
}
