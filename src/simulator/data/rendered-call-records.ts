import type { AccountDataset } from './dataset.js';
import { trunkCallRecordJson } from './trunk-call-data.js';

/** Bytes set aside per call before rendering; the buffer grows if the records are longer. */
const BYTES_PER_CALL_GUESS = 1_024;

/**
 * The JSON text of an account's calls 0 … count − 1 (those that ended before the simulator
 * started), written once as bytes into one buffer: about 0.9 KB a call. A simulator started with
 * `prerender` serves its trunk pages from here, so a page costs copying bytes instead of
 * generating each record and writing it as text. The service it stands in for reads records it
 * stored, on machines of its own; on the one machine of a benchmark the generating took CPU from
 * telesync and PostgreSQL (docs/scaling.md, "The simulator's share of the machine").
 */
export class RenderedCallRecords {
  private constructor(
    private readonly bytes: Buffer,
    /** offsets[i] … offsets[i + 1]: the bytes of call i. */
    private readonly offsets: Float64Array,
  ) {}

  /** Renders calls 0 … count − 1 of `dataset`; not counted as generated (serving them is). */
  static render(dataset: AccountDataset, count: number): RenderedCallRecords {
    let bytes = Buffer.allocUnsafeSlow(
      Math.max(BYTES_PER_CALL_GUESS, count * BYTES_PER_CALL_GUESS),
    );
    const offsets = new Float64Array(count + 1);
    let used = 0;
    for (let index = 0; index < count; index++) {
      const record = dataset.callRecordAt(index, dataset.callFactsAt(index, false));
      // trunkCallRecordJson writes ASCII only, so each character is one byte.
      const text = trunkCallRecordJson(record);
      if (used + text.length > bytes.length) {
        const larger = Buffer.allocUnsafeSlow(Math.max(2 * bytes.length, used + text.length));
        bytes.copy(larger, 0, 0, used);
        bytes = larger;
      }
      used += bytes.write(text, used, 'latin1');
      offsets[index + 1] = used;
    }
    const exact = Buffer.allocUnsafeSlow(used);
    bytes.copy(exact, 0, 0, used);
    return new RenderedCallRecords(exact, offsets);
  }

  /** Calls rendered. */
  get count(): number {
    return this.offsets.length - 1;
  }

  /** Bytes held. */
  get byteLength(): number {
    return this.bytes.length;
  }

  /** The JSON text of call `index` as bytes, or undefined when it was not rendered. */
  textAt(index: number): Buffer | undefined {
    if (!Number.isInteger(index) || index < 0 || index >= this.count) return undefined;
    return this.bytes.subarray(this.offsets[index], this.offsets[index + 1]);
  }
}
