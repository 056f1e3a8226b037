import { describe, expect, it } from 'vitest';
import { LoadGate } from '../../src/load/load-gate.js';
import { ConcurrencyGate } from '../../src/util/concurrency-gate.js';

/** A promise and the functions that settle it. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A transaction given to `gate` that holds its connection until released. */
function heldWrite(gate: LoadGate): { release: () => void; done: Promise<void> } {
  const held = deferred();
  return { release: held.resolve, done: gate.write(() => held.promise) };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

describe('ConcurrencyGate', () => {
  it('runs at most `limit` at once and the others in the order they came', async () => {
    const gate = new ConcurrencyGate(2);
    const works = Array.from({ length: 5 }, () => deferred());
    const started: number[] = [];
    const done = works.map((work, index) =>
      gate.run(async () => {
        started.push(index);
        await work.promise;
        return index;
      }),
    );
    await settle();
    expect(started).toEqual([0, 1]);
    works[1]!.resolve();
    await settle();
    expect(started).toEqual([0, 1, 2]);
    works[0]!.resolve();
    works[2]!.resolve();
    await settle();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    works[3]!.resolve();
    works[4]!.resolve();
    expect(await Promise.all(done)).toEqual([0, 1, 2, 3, 4]);
  });

  it('a failed work gives its slot to the next and its failure to its caller', async () => {
    const gate = new ConcurrencyGate(1);
    const first = gate.run(() => Promise.reject(new Error('first failed')));
    const second = gate.run(() => Promise.resolve('second ran'));
    await expect(first).rejects.toThrow('first failed');
    await expect(second).resolves.toBe('second ran');
  });

  it('a newcomer does not take a slot that is being handed to one waiting', async () => {
    const gate = new ConcurrencyGate(1);
    const order: string[] = [];
    const holder = deferred();
    const held = gate.run(() => holder.promise);
    const waiting = gate.run(() => {
      order.push('waiting');
      return Promise.resolve();
    });
    holder.resolve();
    // The holder is done; the one waiting has its slot but has not run yet.
    await held;
    const newcomer = gate.run(() => {
      order.push('newcomer');
      return Promise.resolve();
    });
    await Promise.all([held, waiting, newcomer]);
    expect(order).toEqual(['waiting', 'newcomer']);
  });

  it('has room while fewer than `limit` run, and none while one waits for a slot', async () => {
    const gate = new ConcurrencyGate(1);
    expect(gate.hasRoom).toBe(true);
    const first = deferred();
    const second = deferred();
    const a = gate.run(() => first.promise);
    const b = gate.run(() => second.promise);
    expect(gate.hasRoom).toBe(false);
    first.resolve();
    await a;
    // The slot went straight to the one waiting.
    expect(gate.hasRoom).toBe(false);
    second.resolve();
    await b;
    expect(gate.hasRoom).toBe(true);
  });

  it('refuses a limit under one', () => {
    expect(() => new ConcurrencyGate(0)).toThrow(RangeError);
    expect(() => new ConcurrencyGate(1.5)).toThrow(RangeError);
  });
});

describe('LoadGate', () => {
  it('is full past its bound, and wakes those waiting for room once rows are written', async () => {
    const gate = new LoadGate(1, 100);
    gate.enqueued(100);
    expect(gate.full).toBe(false);
    await gate.room();
    gate.enqueued(1);
    expect(gate.full).toBe(true);
    let woken = 0;
    const waits = [gate.room(), gate.room()].map((wait) => wait.then(() => woken++));
    gate.dequeued(0);
    await settle();
    expect(woken).toBe(0);
    gate.dequeued(1);
    await Promise.all(waits);
    expect(woken).toBe(2);
    expect(gate.queuedRows).toBe(100);
  });

  it('sized for batches, bounds four batches a connection', () => {
    const gate = LoadGate.forBatches(2, 100);
    expect(gate.connections).toBe(2);
    expect(gate.maxQueuedRows).toBe(800);
  });

  it('writes one transaction at a time with one connection', async () => {
    const gate = new LoadGate(1, 10);
    const first = deferred();
    let secondStarted = false;
    const a = gate.write(() => first.promise);
    const b = gate.write(() => {
      secondStarted = true;
      return Promise.resolve();
    });
    await settle();
    expect(secondStarted).toBe(false);
    first.resolve();
    await Promise.all([a, b]);
    expect(secondStarted).toBe(true);
  });

  it('offers a connection left free to the units waiting longest, one loader a connection', async () => {
    const gate = new LoadGate(2, 100);
    const flushed: string[] = [];
    const first = heldWrite(gate);
    const second = heldWrite(gate);
    expect(gate.hasFreeConnection).toBe(false);
    gate.whenConnectionFree(() => flushed.push('one'));
    const withdraw = gate.whenConnectionFree(() => flushed.push('withdrawn'));
    gate.whenConnectionFree(() => flushed.push('three'));
    withdraw();
    first.release();
    await first.done;
    expect(flushed).toEqual(['one']);
    second.release();
    await second.done;
    expect(flushed).toEqual(['one', 'three']);
  });

  it('keeps waiting units back while a transaction waits for the connection left free', async () => {
    const gate = new LoadGate(1, 100);
    const flushed: string[] = [];
    const first = heldWrite(gate);
    const second = heldWrite(gate);
    gate.whenConnectionFree(() => flushed.push('waiting'));
    first.release();
    await first.done;
    await settle();
    // The connection passed to the transaction in line: the units wait on.
    expect(flushed).toEqual([]);
    second.release();
    await second.done;
    expect(flushed).toEqual(['waiting']);
    expect(gate.hasFreeConnection).toBe(true);
  });

  it('offers a connection also when the transaction on it failed', async () => {
    const gate = new LoadGate(1, 100);
    const flushed: string[] = [];
    const failing = gate.write(() => Promise.reject(new Error('lost')));
    gate.whenConnectionFree(() => flushed.push('waiting'));
    await expect(failing).rejects.toThrow('lost');
    expect(flushed).toEqual(['waiting']);
  });
});
