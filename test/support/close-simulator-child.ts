import { readFileSync } from 'node:fs';
import { startSimulator } from '../../src/simulator/simulator-server.js';

// Run as a child process by test/integration/simulator-streams.test.ts: starts a simulator, a
// stream whose WebSocket connects and whose callback receiver fails (so a retry waits), closes the
// simulator, and then does nothing: the process must end by itself.

const ACCOUNT = { authId: 'MACLOSING00000000001', authToken: 'closing-token-0123456789' };
const sim = await startSimulator({
  seed: 'closing',
  calls: 10,
  accounts: [ACCOUNT],
  connectMedia: true,
  mediaCa: readFileSync(process.env.MEDIA_CA ?? '', 'utf8'),
  streamAudioSeconds: 60,
  callbackRetry: { attempts: 5, baseDelayMs: 60_000, maxDelayMs: 60_000, timeoutMs: 30_000 },
});
const call = sim.dataset().accounts[0]?.liveCallUuids[0] ?? '';
const response = await fetch(`${sim.url}/v1/Account/${ACCOUNT.authId}/Call/${call}/Stream/`, {
  method: 'POST',
  headers: {
    authorization: `Basic ${Buffer.from(`${ACCOUNT.authId}:${ACCOUNT.authToken}`).toString('base64')}`,
  },
  body: JSON.stringify({
    service_url: process.env.MEDIA_URL,
    stream_timeout: 3600,
    status_callback_url: process.env.CALLBACK_URL,
  }),
});
if (response.status !== 201) throw new Error(`stream start answered ${response.status}`);
const deadline = Date.now() + 10_000;
while (!(sim.stats().streams.connected === 1 && sim.stats().callbacks.sent === 1)) {
  if (Date.now() > deadline) throw new Error(`not connected: ${JSON.stringify(sim.stats())}`);
  await new Promise((resolve) => setTimeout(resolve, 20));
}
// Let the first attempt fail, so the retry's wait is what is pending.
await new Promise((resolve) => setTimeout(resolve, 300));
await sim.close();
console.log('closed with the stream connected and a callback retry pending');
