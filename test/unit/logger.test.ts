import { ApiError } from '../../src/api/api-errors.js';
import { describe, expect, it } from 'vitest';
import { createLogger, prettyLine, type LogLevel } from '../../src/util/logger.js';

function capture(pretty = false, level: LogLevel = 'debug') {
  const lines: string[] = [];
  const log = createLogger({
    level,
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

  it('says a failure once: an error the message already says keeps only its type and details', () => {
    const refused = new ApiError({
      kind: 'http',
      method: 'GET',
      path: '/v1/Account/MA_X/Trunk/Call/?end_time__gte=2026-11-21+00%3A00%3A00&limit=20',
      status: 401,
      retryable: false,
    });
    const { log, lines } = capture(false, 'info');
    log.error({ err: refused }, `run failed: ${refused.message}`);
    const line = JSON.parse(lines[0]!) as { msg: string; err: Record<string, unknown> };
    expect(line.msg).toBe(
      'run failed: 401 authentication failed; check TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN',
    );
    expect(line.err).toMatchObject({ type: 'ApiError', status: 401, path: refused.path });
    expect(line.err).not.toHaveProperty('message');
    expect(lines[0]!.split('Trunk/Call').length - 1).toBe(1);
  });

  it('logs an error as its type, message, causes and fields, its stack only at debug level or for a bug', () => {
    // node-postgres's error: a SQLSTATE code worth keeping, and fields locating PostgreSQL's C source.
    const database = Object.assign(new Error('relation "s.sync_runs" does not exist'), {
      length: 116,
      severity: 'ERROR',
      code: '42P01',
      position: '8',
      file: 'parse_relation.c',
      line: '1371',
      routine: 'parserOpenTable',
    });
    const failed = new Error('run could not start', { cause: database });
    const atInfo = capture(false, 'info');
    atInfo.log.error({ err: failed }, 'run failed');
    atInfo.log.error(
      { err: new TypeError("Cannot read properties of undefined (reading 'x')") },
      'bug',
    );
    // One line per error, whatever its causes: nothing else is written.
    expect(atInfo.lines).toHaveLength(2);
    const [operational, bug] = atInfo.lines.map(
      (line) => JSON.parse(line) as { err: Record<string, string> },
    );
    expect(operational!.err).toEqual({
      type: 'Error',
      message: 'run could not start: relation "s.sync_runs" does not exist',
    });
    expect(bug!.err.type).toBe('TypeError');
    expect(bug!.err.stack).toContain('    at ');

    const atDebug = capture(false, 'debug');
    atDebug.log.error({ err: database }, 'run failed');
    const { err } = JSON.parse(atDebug.lines[0]!) as { err: Record<string, string> };
    expect(err).toMatchObject({ type: 'Error', code: '42P01' });
    expect(err.stack).toContain('    at ');
    expect(atDebug.lines[0]).not.toContain('parserOpenTable');
    expect(atDebug.lines).toHaveLength(1);
  });
});
