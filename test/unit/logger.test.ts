import { describe, expect, it } from 'vitest';
import { createLogger, prettyLine } from '../../src/util/logger.js';

function capture(pretty = false) {
  const lines: string[] = [];
  const log = createLogger({
    level: 'debug',
    secrets: ['tok_s3cr"et\\x', 'db-p@ss'],
    pretty,
    write: (line) => lines.push(line),
  });
  return { log, lines };
}

describe('createLogger', () => {
  it('removes every secret from messages, fields, nested objects and errors, however they are escaped', () => {
    const { log, lines } = capture();
    log.info(
      { header: 'Basic tok_s3cr"et\\x', nested: { url: 'postgres://u:db-p@ss@h/db' } },
      'token tok_s3cr"et\\x and password db-p@ss',
    );
    log.error({ err: new Error('failed with db-p@ss') }, 'boom');
    const text = lines.join('');
    expect(text).not.toContain('db-p@ss');
    expect(text).not.toContain('tok_s3cr');
    expect(text).toContain('[redacted]');
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(first).toMatchObject({
      level: 'info',
      msg: 'token [redacted] and password [redacted]',
      header: 'Basic [redacted]',
    });
  });

  it('writes readable lines on a terminal', () => {
    const { log, lines } = capture(true);
    log.warn({ stream: 'trunk_calls', windows: 3 }, 'window failed');
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d WARN {2}window failed {2}stream=trunk_calls windows=3\n$/,
    );
    expect(prettyLine('not json\n')).toBe('not json\n');
  });
});
