import { describe, expect, it } from 'vitest';
import { failureReport } from '../../bench/fault-harness.js';

describe("the fault harness's report of failed tests", () => {
  it("keeps vitest's Failed Tests section, with each failure's assertion", () => {
    const output = [
      ' ✓ quarantines each bad record  1286ms',
      ' × survives pg_terminate_backend 4205ms',
      '',
      '\u001b[31m⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯\u001b[39m',
      ' FAIL  test/e2e/fault-harness.test.ts > survives pg_terminate_backend',
      'AssertionError: expected 1 to be 0',
      ' ❯ test/e2e/fault-harness.test.ts:612:7',
      '',
      ' Test Files  1 failed (1)',
    ].join('\n');
    const report = failureReport(output);
    expect(report.startsWith('⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1')).toBe(true);
    expect(report).toContain('AssertionError: expected 1 to be 0');
    expect(report).toContain('fault-harness.test.ts:612:7');
    expect(report).not.toContain('quarantines each bad record');
  });

  it('falls back to the end of the output when there is no such section', () => {
    expect(failureReport('a'.repeat(2000) + 'the end')).toBe(
      `their output ends: ${'a'.repeat(1493)}the end`,
    );
  });
});
