import { describe, expect, it } from 'vitest';
import { v8FlagUnlessChosen } from '../../src/util/v8-flag.js';

describe('v8FlagUnlessChosen', () => {
  it('gives the flag with its value when node was started without it', () => {
    expect(v8FlagUnlessChosen('--wasm-tiering-budget', 2_000_000_000, [])).toBe(
      '--wasm-tiering-budget=2000000000',
    );
    expect(
      v8FlagUnlessChosen('--wasm-tiering-budget', 5, ['--max-semi-space-size=32', '--wasm-lazy']),
    ).toBe('--wasm-tiering-budget=5');
  });

  it('keeps the choice of whoever started node, in either spelling', () => {
    expect(v8FlagUnlessChosen('--wasm-tiering-budget', 5, ['--wasm-tiering-budget=9'])).toBe(
      undefined,
    );
    expect(v8FlagUnlessChosen('--wasm-tiering-budget', 5, ['--wasm_tiering_budget=9'])).toBe(
      undefined,
    );
  });
});
