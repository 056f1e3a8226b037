import { describe, expect, it } from 'vitest';
import {
  formatUuid,
  hashIndex,
  indexedUuid,
  indexOfIndexedUuid,
  isUuidText,
  permute32,
  Rng,
  unpermute32,
} from '../../src/simulator/data/prng.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('seeded randomness', () => {
  it('gives the same sequence for the same seed and another for another seed', () => {
    const draw = (seed: number): number[] => {
      const rng = new Rng(seed);
      return Array.from({ length: 5 }, () => rng.nextUint32());
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
  });

  it('draws whole numbers within the asked bounds', () => {
    const rng = new Rng(7);
    const seen = new Set<number>();
    for (let k = 0; k < 2_000; k++) {
      const value = rng.between(3, 6);
      expect(value).toBeGreaterThanOrEqual(3);
      expect(value).toBeLessThanOrEqual(6);
      seen.add(value);
    }
    expect([...seen].sort()).toEqual([3, 4, 5, 6]);
  });

  it('hashes neighbouring indices to distinct values, also beyond 2^32', () => {
    const hashes = new Set<number>();
    for (let index = 0; index < 10_000; index++) hashes.add(hashIndex(99, index));
    expect(hashes.size).toBe(10_000);
    expect(hashIndex(99, 2 ** 32 + 5)).not.toBe(hashIndex(99, 5));
  });
});

describe('UUIDs', () => {
  it('are shaped as version 4 with the RFC variant', () => {
    const rng = new Rng(1);
    for (let k = 0; k < 200; k++) expect(rng.uuid()).toMatch(UUID_V4);
    expect(formatUuid(0, 0, 0, 0)).toBe('00000000-0000-4000-8000-000000000000');
    // Every nibble position, and the sign bit of each word (read as uint32).
    expect(formatUuid(0x01234567, 0x89abcdef, 0xfedcba98, 0x76543210)).toBe(
      '01234567-89ab-4def-bedc-ba9876543210',
    );
    expect(formatUuid(-1, -1, -1, -1)).toBe('ffffffff-ffff-4fff-bfff-ffffffffffff');
    expect(isUuidText('00000000-0000-4000-8000-000000000000')).toBe(true);
    expect(isUuidText('not-a-uuid')).toBe(false);
  });

  it('permute32 is undone by unpermute32 and scatters neighbours', () => {
    for (const value of [0, 1, 2, 65_535, 65_536, 2 ** 31, 2 ** 32 - 1]) {
      expect(unpermute32(1234, permute32(1234, value))).toBe(value);
    }
    expect(Math.abs(permute32(1234, 1) - permute32(1234, 2))).toBeGreaterThan(1_000);
  });

  it('an indexed UUID leads back to its index, and a foreign UUID to none', () => {
    for (const index of [0, 1, 17, 999_999, 4_000_000_000]) {
      const uuid = indexedUuid(555, index);
      expect(uuid).toMatch(UUID_V4);
      expect(indexOfIndexedUuid(555, uuid)).toBe(index);
      expect(indexOfIndexedUuid(555, uuid.toUpperCase())).toBe(index);
      // Another key (another account) does not recognise it.
      expect(indexOfIndexedUuid(556, uuid)).toBeUndefined();
    }
    expect(indexOfIndexedUuid(555, new Rng(3).uuid())).toBeUndefined();
    expect(indexOfIndexedUuid(555, 'garbage')).toBeUndefined();
  });
});
