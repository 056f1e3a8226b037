import { describe, expect, it } from 'vitest';
import { isStopped, StoppedError, throwIfStopped } from '../../src/util/stopped-error.js';

describe('throwIfStopped', () => {
  it('does nothing without a signal or before the abort', () => {
    expect(() => throwIfStopped(undefined)).not.toThrow();
    expect(() => throwIfStopped(new AbortController().signal)).not.toThrow();
  });

  it('throws the stop, with the given message and the reason of the abort as its cause', () => {
    const controller = new AbortController();
    const reason = new Error('shutdown requested');
    controller.abort(reason);
    let thrown: unknown;
    try {
      throwIfStopped(controller.signal, 'stopped between two rounds');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(StoppedError);
    expect(isStopped(thrown)).toBe(true);
    expect((thrown as StoppedError).message).toBe('stopped between two rounds');
    expect((thrown as StoppedError).cause).toBe(reason);
  });

  it('says "stopped on request" when given no message', () => {
    const controller = new AbortController();
    controller.abort();
    expect(() => throwIfStopped(controller.signal)).toThrow('stopped on request');
  });
});
