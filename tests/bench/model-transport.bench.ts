import { fork } from 'node:child_process';
import { createHttpFetch } from '@flotilla/llm';
import { table } from './stats.js';

/**
 * What the HTTP transport under the provider SDKs costs the step worker per model request: the
 * client process's CPU (user + system) for a request with a 110 KiB JSON body (a long
 * conversation) and its answer read to the end, against a local server in another process, on a
 * kept-alive connection. Compared in the same run: Node's global `fetch`, with and without undici's
 * proxy-aware dispatcher. The answer is a small JSON body or a 20-event stream.
 */
export async function benchModelTransport(requests = 2_000): Promise<string> {
  const server = fork(new URL('./model-transport.server.ts', import.meta.url), { stdio: 'inherit' });
  const port = await new Promise<number>((resolve) => server.once('message', (message) => resolve(Number(message))));
  try {
    const body = JSON.stringify({
      messages: Array.from({ length: 400 }, (_, index) => ({ role: 'user', content: `${'x'.repeat(250)}${index}` })),
    });
    const { EnvHttpProxyAgent } = await import('undici');
    const dispatcher = new EnvHttpProxyAgent({ httpProxy: '', httpsProxy: '', noProxy: '' });
    const transports: [string, typeof fetch][] = [
      ['flotilla transport (undici dispatcher, proxy-aware)', createHttpFetch({ proxy: {} })],
      ['global fetch', fetch],
      ['global fetch on EnvHttpProxyAgent', (input, init) => fetch(input, { ...init, dispatcher } as RequestInit)],
    ];
    const rows = [['transport', 'answer', 'client CPU per request', 'wall per request']];
    for (const round of [0, 1]) {
      for (const [name, transport] of transports) {
        for (const path of ['/json', '/sse']) {
          const run = async (count: number): Promise<void> => {
            for (let index = 0; index < count; index += 1) {
              const response = await transport(`http://127.0.0.1:${port}${path}`, {
                method: 'POST',
                headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
                body,
              });
              await response.text();
            }
          };
          await run(200);
          const cpu = process.cpuUsage();
          const start = performance.now();
          await run(requests);
          const used = process.cpuUsage(cpu);
          const wall = performance.now() - start;
          // the first round warms every path up; the second is the one reported
          if (round === 1)
            rows.push([
              name,
              path.slice(1),
              `${((used.user + used.system) / requests).toFixed(0)} µs`,
              `${((wall * 1000) / requests).toFixed(0)} µs`,
            ]);
        }
      }
    }
    await dispatcher.close();
    return `Model transport: a 110 KiB request and its answer over a kept-alive local connection (${requests} sequential requests each)\n${table(rows)}`;
  } finally {
    server.kill();
  }
}
