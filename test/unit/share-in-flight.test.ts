import { describe, expect, it } from 'vitest';
import { shareInFlight } from '../../src/util/share-in-flight.js';

/** A read whose calls are counted and settled by hand. */
function manualRead() {
  const settle: { resolve: (value: number) => void; reject: (error: Error) => void }[] = [];
  const read = () =>
    new Promise<number>((resolve, reject) => {
      settle.push({ resolve, reject });
    });
  return { read, settle };
}

describe('shareInFlight', () => {
  it('gives the callers that ask while a read is in flight its one answer', async () => {
    const { read, settle } = manualRead();
    const shared = shareInFlight(read);
    const first = shared();
    const second = shared();
    expect(settle).toHaveLength(1);
    settle[0]!.resolve(7);
    expect(await Promise.all([first, second])).toEqual([7, 7]);
  });

  it('reads again for a caller that asks after the answer came', async () => {
    const { read, settle } = manualRead();
    const shared = shareInFlight(read);
    const first = shared();
    settle[0]!.resolve(1);
    await first;
    const later = shared();
    expect(settle).toHaveLength(2);
    settle[1]!.resolve(2);
    expect(await later).toBe(2);
  });

  it('shares a failure with those waiting, and does not keep it', async () => {
    const { read, settle } = manualRead();
    const shared = shareInFlight(read);
    const first = shared();
    const second = shared();
    settle[0]!.reject(new Error('the database is away'));
    await expect(first).rejects.toThrow('the database is away');
    await expect(second).rejects.toThrow('the database is away');
    const again = shared();
    settle[1]!.resolve(3);
    expect(await again).toBe(3);
  });
});
