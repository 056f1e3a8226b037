import { epochMicrosFromMillis, formatIsoFixed } from '../util/micros.js';
import type { CliIo } from './cli-io.js';

export type NoticeLevel = 'info' | 'warn' | 'error';

/**
 * A line a command says to the person running it ("note: …", "stopping: …", "telesync failed: …"):
 * plain text where the logs are read as text (a terminal), otherwise one JSON line shaped like the
 * log lines around it, so the log stream on stderr stays parseable.
 */
export function writeNotice(
  io: CliIo,
  level: NoticeLevel,
  text: string,
  fields: Readonly<Record<string, unknown>> = {},
): void {
  if (io.isTty) {
    io.err(text);
    return;
  }
  io.err(
    JSON.stringify({
      level,
      time: formatIsoFixed(epochMicrosFromMillis(Date.now())),
      msg: text,
      ...fields,
    }),
  );
}
