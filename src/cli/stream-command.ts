import type { Command } from 'commander';
import { ApiError } from '../api/api-errors.js';
import { StreamStartUnknownError } from '../api/telephony-client.js';
import {
  AUDIO_TRACKS,
  CALLBACK_METHODS,
  checkStartStreamParams,
  STREAM_CONTENT_TYPES,
  STREAM_DEFAULTS,
} from '../api/stream-rules.js';
import { streamCallbackUrl } from '../http/http-settings.js';
import type { CommandContext } from './command-context.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import { writeNotice } from './notice.js';
import { isUuid } from './user-input.js';

interface StreamStartOptions {
  url: string;
  bidirectional?: boolean;
  audioTrack?: string;
  timeout?: string;
  callbackUrl?: string;
  /** False with --no-callback. */
  callback?: boolean;
  callbackMethod?: string;
  contentType?: string;
  extraHeaders?: string;
  account?: string;
  json?: boolean;
}

export function registerStreamCommand(program: Command, context: CommandContext): void {
  const stream = program.command('stream').description('act on the audio streams of live calls');
  stream
    .command('start')
    .description('start streaming the audio of a live call to a secure WebSocket URL')
    .argument('<call_uuid>', 'the live call')
    .requiredOption('--url <wss_url>', 'where the audio goes: wss://host/path')
    .option('--bidirectional', 'let the WebSocket send audio back (audio track must be inbound)')
    .option(
      '--audio-track <track>',
      `${AUDIO_TRACKS.join(', ')} (default ${STREAM_DEFAULTS.audio_track})`,
    )
    .option(
      '--timeout <seconds>',
      `stop streaming after this many seconds (default ${STREAM_DEFAULTS.stream_timeout})`,
    )
    .option(
      '--callback-url <url>',
      "receives stream events (connected, stopped, failed…); default: telesync's own callback route when TELESYNC_PUBLIC_URL is set",
    )
    .option('--no-callback', 'ask for no stream events, even when TELESYNC_PUBLIC_URL is set')
    .option(
      '--callback-method <method>',
      `${CALLBACK_METHODS.join(' or ')} (default ${STREAM_DEFAULTS.status_callback_method})`,
    )
    .option(
      '--content-type <type>',
      `${STREAM_CONTENT_TYPES.join(', ')} (default ${STREAM_DEFAULTS.content_type})`,
    )
    .option(
      '--extra-headers <pairs>',
      'key1=value1,key2=value2 (letters and digits only, under 512 bytes)',
    )
    .option(
      '--account <auth_id>',
      'the configured account the call belongs to (default: the only one)',
    )
    .option('--json', "print the service's answer as JSON")
    .addHelpText(
      'after',
      '\nEvery rule is checked before anything is sent. With TELESYNC_PUBLIC_URL set, the stream reports its\n' +
        "events (connected, stopped, failed…) to telesync's own callback route, where `telesync schedule`\n" +
        'stores them in stream_events; --callback-url sends them elsewhere, --no-callback nowhere.\n\nExamples:\n' +
        '  $ telesync stream start 6efab1b5-4659-4fa0-a7e2-25a414cdeafb --url wss://media.example.com/audio\n' +
        '  $ telesync stream start 6efab1b5-… --url wss://media.example.com/audio --bidirectional --timeout 600 \\\n' +
        '      --callback-url https://hooks.example.com/stream --extra-headers callId123=abc',
    )
    .action(async (callUuid: string, options: StreamStartOptions) => {
      context.setExit(await runStreamStart(context, callUuid, options));
    });
}

async function runStreamStart(
  context: CommandContext,
  callUuid: string,
  options: StreamStartOptions,
): Promise<ExitCode> {
  if (!isUuid(callUuid))
    throw new UsageError(
      `not a call UUID: "${callUuid}" (expected the form 6efab1b5-4659-4fa0-a7e2-25a414cdeafb)`,
    );
  const timeout =
    options.timeout === undefined
      ? undefined
      : /^\d+$/.test(options.timeout)
        ? Number(options.timeout)
        : options.timeout;
  const params = {
    service_url: options.url,
    ...(options.bidirectional === true ? { bidirectional: true } : {}),
    ...(options.audioTrack !== undefined ? { audio_track: options.audioTrack } : {}),
    ...(timeout !== undefined ? { stream_timeout: timeout } : {}),
    ...(options.callbackUrl !== undefined ? { status_callback_url: options.callbackUrl } : {}),
    ...(options.callbackMethod !== undefined
      ? { status_callback_method: options.callbackMethod.toUpperCase() }
      : {}),
    ...(options.contentType !== undefined ? { content_type: options.contentType } : {}),
    ...(options.extraHeaders !== undefined ? { extra_headers: options.extraHeaders } : {}),
  };
  if (options.callback === false && options.callbackUrl !== undefined)
    throw new UsageError(
      '--callback-url and --no-callback contradict each other; give one of them',
    );
  // Refused before any configuration or network is touched: a bad flag is a usage error.
  checkedOrThrow(params);
  const app = context.app('stream start');
  const ownCallbackUrl =
    options.callbackUrl === undefined && options.callback !== false
      ? streamCallbackUrl(app.config.callbacks)
      : undefined;
  const checked = checkedOrThrow(
    ownCallbackUrl === undefined ? params : { ...params, status_callback_url: ownCallbackUrl },
  );
  const accounts = app.selectAccounts(options.account);
  if (accounts.length > 1)
    throw new UsageError(
      `several accounts are configured; say which one with --account (${accounts.map((a) => a.authId).join(', ')})`,
    );
  return app.withClients(accounts, async (clients) => {
    try {
      const outcome = await clients[0]!.startStreamOnce(callUuid, checked.params);
      const streamId = outcome.kind === 'answered' ? outcome.answer.stream_id : outcome.streamId;
      const details =
        `  ${checked.params.audio_track} audio of call ${callUuid} to ${checked.params.service_url}${checked.params.bidirectional ? ', bidirectional' : ''}, ` +
        `for at most ${checked.params.stream_timeout}s\n` +
        `  its events: ${checked.params.status_callback_url === undefined ? 'none (no callback URL)' : `${checked.params.status_callback_method} ${checked.params.status_callback_url}`}\n` +
        `  its record: telesync lookup streams ${callUuid}`;
      if (outcome.kind === 'answered') {
        const { answer } = outcome;
        context.io.out(
          options.json === true
            ? JSON.stringify(answer)
            : `${answer.message || 'stream started'}: stream_id ${streamId} (api_id ${answer.api_id})\n${details}`,
        );
      } else {
        // The answer was lost; the call's stream list shows the one stream the request began.
        const lost = outcome.lostAnswer.message;
        context.io.out(
          options.json === true
            ? JSON.stringify({ stream_id: streamId, found_in_stream_list: true, lost_answer: lost })
            : `stream started: stream_id ${streamId} (the answer was lost: ${lost}; found in the call's stream list)\n${details}`,
        );
      }
      return EXIT.OK;
    } catch (error) {
      if (error instanceof StreamStartUnknownError) {
        writeNotice(context.io, 'error', error.message);
        return EXIT.OUTCOME_UNKNOWN;
      }
      if (error instanceof ApiError) {
        writeNotice(context.io, 'error', `could not start the stream: ${error.message}`);
        return EXIT.FAILED;
      }
      throw error;
    }
  });
}

/** The parameters with every default applied, or a usage error listing every broken rule. */
function checkedOrThrow(params: Parameters<typeof checkStartStreamParams>[0]) {
  const checked = checkStartStreamParams(params);
  if (!checked.ok) {
    throw new UsageError(
      `cannot start the stream:\n${checked.violations.map((violation) => `  - ${violation.message}`).join('\n')}`,
    );
  }
  return checked;
}
