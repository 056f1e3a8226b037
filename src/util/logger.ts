import { Writable } from 'node:stream';
import pino from 'pino';
import { epochMicrosFromMillis, formatIsoFixed } from './micros.js';
import { createRedactor } from './redact.js';

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
  const redact = createRedactor(
    options.secrets.flatMap((secret) => [secret, JSON.stringify(secret).slice(1, -1)]),
  );
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const line = redact(chunk.toString('utf8'));
      write(options.pretty ? prettyLine(line) : line);
      done();
    },
  });
  const errorSerializer = serializeError(options.level === 'debug' || options.level === 'trace');
  return pino(
    {
      level: options.level,
      base: undefined,
      // Six fraction digits, like every timestamp of telesync's machine output.
      timestamp: () => `,"time":"${formatIsoFixed(epochMicrosFromMillis(Date.now()))}"`,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: errorSerializer, error: errorSerializer },
      hooks: {
        // A failure is said once: when the line's message already says the error's, the error
        // field keeps its type and details (status, path, api_id…) without repeating it.
        logMethod(args, method) {
          const [fields, message] = args as unknown[];
          const err = (fields as { err?: unknown } | null)?.err;
          if (err instanceof Error && typeof message === 'string') {
            // The serialised message includes the causes': dropped only when the line says it all.
            const { message: said, ...details } = errorSerializer(err) as Record<string, unknown>;
            if (typeof said === 'string' && said !== '' && message.includes(said))
              args[0] = { ...(fields as object), err: details };
          }
          method.apply(this, args);
        },
      },
    },
    sink,
  );
}

/** Fields of node-postgres's errors that locate the server's C source or repeat the level. */
const ERROR_NOISE = [
  'length',
  'severity',
  'file',
  'line',
  'routine',
  'position',
  'internalPosition',
];

/** Error types that mean a bug in telesync, not a condition an operator acts on. */
const PROGRAMMING_ERRORS = [TypeError, ReferenceError, RangeError, SyntaxError];

/**
 * An error as an operator reads it: its type, message (with its causes'), and fields such as a
 * status or SQLSTATE code. The stack only where it helps: at debug level, or for a programming
 * error, which is worth a report; otherwise it turns one failure into a screenful.
 */
function serializeError(withStacks: boolean): (value: unknown) => unknown {
  return (value) => {
    if (!(value instanceof Error)) return value;
    const { stack, ...fields } = pino.stdSerializers.err(value) as Record<string, unknown>;
    for (const key of ERROR_NOISE) delete fields[key];
    if (fields.name === fields.type) delete fields.name;
    const keepStack = withStacks || PROGRAMMING_ERRORS.some((type) => value instanceof type);
    return keepStack ? { ...fields, stack } : fields;
  };
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
