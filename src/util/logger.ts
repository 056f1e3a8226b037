import { Writable } from 'node:stream';
import pino from 'pino';
import { epochMicrosFromMillis, formatIsoFixed } from './micros.js';
import { redactSecrets } from './redact.js';

export type Logger = pino.Logger;

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

export interface LoggerOptions {
  level: LogLevel;
  /** Values that must never appear in a log line (auth tokens, database passwords). */
  secrets: readonly string[];
  /** Human-readable lines instead of JSON (a terminal). */
  pretty: boolean;
  /** Where lines go; stderr by default, so stdout stays for command output. */
  write?: (line: string) => void;
}

/**
 * A pino logger whose every line passes through one sink that removes the secrets, whatever field
 * or message they hide in: redaction by value, not by path, so no new log call can leak a token.
 */
export function createLogger(options: LoggerOptions): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  // The secrets as they would appear inside a JSON string too (quotes and backslashes escaped).
  const secrets = options.secrets.flatMap((secret) => [
    secret,
    JSON.stringify(secret).slice(1, -1),
  ]);
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const line = redactSecrets(chunk.toString('utf8'), secrets);
      write(options.pretty ? prettyLine(line) : line);
      done();
    },
  });
  return pino(
    {
      level: options.level,
      base: undefined,
      // Six fraction digits, like every timestamp of telesync's machine output.
      timestamp: () => `,"time":"${formatIsoFixed(epochMicrosFromMillis(Date.now()))}"`,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
    },
    sink,
  );
}

const LEVEL_LABEL: Readonly<Record<string, string>> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO ',
  warn: 'WARN ',
  error: 'ERROR',
  fatal: 'FATAL',
};

/** `12:00:01 INFO  message key=value …` from one JSON log line. */
export function prettyLine(jsonLine: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(jsonLine) as Record<string, unknown>;
  } catch {
    return jsonLine;
  }
  const { time, level, msg, ...fields } = entry;
  const clock = typeof time === 'string' ? time.slice(11, 19) : '';
  const label = LEVEL_LABEL[String(level)] ?? String(level);
  const rest = Object.entries(fields)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  return `${clock} ${label} ${typeof msg === 'string' ? msg : ''}${rest ? `  ${rest}` : ''}\n`;
}
