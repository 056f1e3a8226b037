/**
 * Seeded hashing and pseudo-random numbers for the simulator. Everything the simulator invents is a
 * function of (seed, account, index), so the same options always give the same data, at any volume,
 * without storing it. 32-bit integer arithmetic only: fast, and identical on every platform.
 */

const TWO_POW_32 = 4_294_967_296;

/** MurmurHash3's 32-bit finaliser: a bijection on uint32 that spreads every input bit. */
export function fmix32(value: number): number {
  let h = value >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A uint32 hash of a text (FNV-1a over UTF-16 code units, then finalised). */
export function hashText(text: string): number {
  let h = 0x811c9dc5;
  for (let k = 0; k < text.length; k++) {
    h ^= text.charCodeAt(k);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

/** A key derived from another key and a purpose, so that each use of a seed draws its own values. */
export function deriveKey(key: number, purpose: string): number {
  return fmix32((key ^ hashText(purpose)) + 0x9e3779b9);
}

/**
 * A uint32 hash of (key, index) for any safe integer index ≥ 0. For a fixed key, distinct indices
 * below 2^32 give distinct hashes (both steps are bijections), so neighbouring calls never collide.
 */
export function hashIndex(key: number, index: number): number {
  const low = index >>> 0;
  const high = Math.floor(index / TWO_POW_32) >>> 0;
  return fmix32(fmix32((key ^ low) >>> 0) ^ Math.imul(high ^ 0x5bd1e995, 0x27d4eb2d) ^ key);
}

/** A hash as a fraction in [0, 1). */
export function unitFraction(hash: number): number {
  return (hash >>> 0) / TWO_POW_32;
}

/**
 * A small seeded generator (mulberry32). One instance per record: the record's fields are drawn in
 * a fixed order, so adding a draw at the end never changes the fields before it.
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** The next uint32. */
  nextUint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** A fraction in [0, 1). */
  next(): number {
    return this.nextUint32() / TWO_POW_32;
  }

  /** A whole number in [0, count). */
  below(count: number): number {
    return Math.floor(this.next() * count);
  }

  /** A whole number in [min, max], both included. */
  between(min: number, max: number): number {
    return min + this.below(max - min + 1);
  }

  /** True with probability `share`. */
  chance(share: number): boolean {
    return this.next() < share;
  }

  /** One of the items, uniformly. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.below(items.length)] as T;
  }

  /** One of the items, with probability proportional to its weight. */
  pickWeighted<T>(items: readonly (readonly [T, number])[]): T {
    let total = 0;
    for (const [, weight] of items) total += weight;
    let point = this.next() * total;
    for (const [item, weight] of items) {
      if (point < weight) return item;
      point -= weight;
    }
    const last = items[items.length - 1];
    if (last === undefined) throw new RangeError('pick from an empty list');
    return last[0];
  }

  /** `count` decimal digits (the first may be 0). */
  digits(count: number): string {
    let out = '';
    for (let k = 0; k < count; k++) out += String(this.below(10));
    return out;
  }

  /** `count` lower-case hexadecimal digits. */
  hex(count: number): string {
    let out = '';
    while (out.length < count) out += hex8(this.nextUint32());
    return out.slice(0, count);
  }

  /** `count` characters of upper-case letters and digits. */
  alphanumeric(count: number): string {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
    let out = '';
    for (let k = 0; k < count; k++) out += alphabet.charAt(this.below(alphabet.length));
    return out;
  }

  /** A version-4-shaped UUID drawn from this generator. */
  uuid(): string {
    return formatUuid(this.nextUint32(), this.nextUint32(), this.nextUint32(), this.nextUint32());
  }
}

/** Every byte as two lower-case hexadecimal digits. */
const HEX_BYTES = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * A uint32 as 8 hexadecimal digits, by table: Number#toString(16) took a tenth of the simulator's
 * time serving a backfill (four calls a UUID, several UUIDs a record); the table is 9x faster.
 */
function hex8(value: number): string {
  return (
    HEX_BYTES[(value >>> 24) & 0xff]! +
    HEX_BYTES[(value >>> 16) & 0xff]! +
    HEX_BYTES[(value >>> 8) & 0xff]! +
    HEX_BYTES[value & 0xff]!
  );
}

/** A UUID text from 128 bits, with the version (4) and variant (10xx) bits set. */
export function formatUuid(a: number, b: number, c: number, d: number): string {
  const bHex = hex8(b);
  const cHex = hex8(c);
  const variant = '89ab'.charAt(Number.parseInt(cHex.charAt(0), 16) & 3);
  return (
    `${hex8(a)}-${bHex.slice(0, 4)}-4${bHex.slice(5, 8)}-` +
    `${variant}${cHex.slice(1, 4)}-${cHex.slice(4, 8)}${hex8(d)}`
  );
}

const UUID_FORM = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether a text is a UUID in lower-case canonical form. */
export function isUuidText(text: string): boolean {
  return UUID_FORM.test(text);
}

function feistelRound(key: number, round: number, half: number): number {
  return fmix32((half ^ key ^ Math.imul(round + 1, 0x9e3779b1)) >>> 0) & 0xffff;
}

/** A keyed bijection on uint32 (a 4-round Feistel network): neighbouring inputs look unrelated. */
export function permute32(key: number, value: number): number {
  let left = (value >>> 16) & 0xffff;
  let right = value & 0xffff;
  for (let round = 0; round < 4; round++) {
    [left, right] = [right, left ^ feistelRound(key, round, right)];
  }
  return ((left << 16) | right) >>> 0;
}

/** The inverse of permute32 for the same key. */
export function unpermute32(key: number, value: number): number {
  let left = (value >>> 16) & 0xffff;
  let right = value & 0xffff;
  for (let round = 3; round >= 0; round--) {
    [left, right] = [right ^ feistelRound(key, round, left), left];
  }
  return ((left << 16) | right) >>> 0;
}

/** Indices an indexed UUID can carry (its first 32 bits). */
export const INDEXED_UUID_LIMIT = TWO_POW_32;

/**
 * The UUID of item `index` of a lazily generated collection. Its first 32 bits are the index under
 * a keyed permutation, so `indexOfIndexedUuid` finds the item again without any lookup table (a
 * million calls need no map of a million UUIDs); the other bits come from the index's hash.
 */
export function indexedUuid(key: number, index: number): string {
  const rng = new Rng(hashIndex(key, index));
  return formatUuid(permute32(key, index), rng.nextUint32(), rng.nextUint32(), rng.nextUint32());
}

/**
 * The index whose `indexedUuid` is `text`, or undefined when no index has it. The caller still
 * checks the index is in range.
 */
export function indexOfIndexedUuid(key: number, text: string): number | undefined {
  const lower = text.toLowerCase();
  if (!isUuidText(lower)) return undefined;
  const index = unpermute32(key, Number.parseInt(lower.slice(0, 8), 16));
  return indexedUuid(key, index) === lower ? index : undefined;
}
