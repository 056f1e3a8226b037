import { createServer } from 'node:http';
import { fork } from 'node:child_process';
import { Agent, request } from 'undici';
import { HttpTransport } from '../../src/api/transport.js';

if (process.argv[2] === 'server') {
  const body = JSON.stringify({ api_id: 'x', meta: {}, objects: Array.from({ length: 20 }, (_, i) => ({ i, s: 'x'.repeat(750) })) });
  createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(body); })
    .listen(0, '127.0.0.1', function (this: any) { process.send!(this.address().port); });
} else {
  const child = fork(process.argv[1]!, ['server'], { execArgv: ['--import', 'tsx'] });
  const port: number = await new Promise((r) => child.once('message', (m) => r(m as number)));
  const base = `http://127.0.0.1:${port}`;
  const N = Number(process.env.N ?? 20000), C = 8;
  const t = new HttpTransport({ baseUrl: base, authId: 'A', authToken: 'tok', maxRps: 1e6, concurrency: C, timeoutMs: 30000, maxRetries: 3 });
  const agent = new Agent({ connections: C, keepAliveTimeout: 30000 });
  function viaDispatch(): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = []; let status = 0;
      const timer = setTimeout(() => {}, 30000);
      agent.dispatch({ origin: base, path: '/v1/x?limit=20&offset=0', method: 'GET', headers: { authorization: 'Basic QTp0b2s=', 'user-agent': 'telesync/x', accept: 'application/json' }, headersTimeout: 30000, bodyTimeout: 30000 }, {
        onRequestStart() {},
        onResponseStart(_c: unknown, statusCode: number) { status = statusCode; },
        onResponseData(_c: unknown, chunk: Buffer) { chunks.push(chunk); },
        onResponseEnd() { clearTimeout(timer); resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)); },
        onResponseError(_c: unknown, e: Error) { clearTimeout(timer); reject(e); },
      } as any);
    });
  }
  async function run(name: string, one: () => Promise<unknown>) {
    const c0 = process.cpuUsage(); const t0 = performance.now(); let next = 0;
    await Promise.all(Array.from({ length: C }, async () => { while (next++ < N) await one(); }));
    const c = process.cpuUsage(c0); const ms = performance.now() - t0;
    console.log(name, 'cpu us/req', ((c.user + c.system) / N).toFixed(1), 'wall us/req', (ms * 1000 / N).toFixed(1));
  }
  for (let r = 0; r < 3; r++) {
    await run('transport', () => t.request({ method: 'GET', path: '/v1/x', query: new URLSearchParams({ limit: '20', offset: '0' }) }, (b) => b));
    if (process.env.ONLY) continue;
    await run('dispatch ', viaDispatch);
    await run('request  ', async () => { const r = await request(base + '/v1/x?limit=20&offset=0', { dispatcher: agent, headers: { authorization: 'Basic QTp0b2s=', 'user-agent': 'telesync/x', accept: 'application/json' } }); const cs = []; for await (const c of r.body) cs.push(c); return cs; });
    await run('req+sig  ', async () => { const s = AbortSignal.timeout(30000); const r = await request(base + '/v1/x?limit=20&offset=0', { dispatcher: agent, signal: s, headers: { authorization: 'Basic QTp0b2s=', 'user-agent': 'telesync/x', accept: 'application/json' } }); const cs = []; for await (const c of r.body) cs.push(c); return cs; });
  }
  child.kill(); await t.close(); await agent.close();
}
