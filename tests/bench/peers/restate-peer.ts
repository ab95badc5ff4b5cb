import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as restate from '@restatedev/restate-sdk';
import type { PeerOptions } from './figures.js';
import type { Decision, ScriptedLoop } from './loop.js';
import type { PeerEngine } from './measure.js';

const INGRESS = 'http://127.0.0.1:8080';
const ADMIN = 'http://127.0.0.1:9070';
const SERVICE_PORT = 9080;

/**
 * Restate: its server (the binary the npm package ships, one node with its defaults, data in a
 * directory of its own) and, in this process, the service: a conversation is a workflow (its key
 * the conversation's), the model call and the tool each a `ctx.run`, whose result the server
 * journals before the handler goes on. The server is reached over HTTP/2 (the SDK's endpoint,
 * registered as a deployment), the conversation invoked through its HTTP ingress.
 *
 * Run it with the network of a namespace of its own, loopback only (peers.bench.ts does): the
 * server looks up its latest release at start.
 */
export async function startRestate(loop: ScriptedLoop, options: PeerOptions): Promise<PeerEngine> {
  const binary = createRequire(import.meta.url).resolve('@restatedev/restate-server-linux-x64/bin/restate-server');
  const dataDir = await mkdtemp(join(options.scratchDir, 'restate-'));
  const server = spawn(binary, ['--base-dir', dataDir, '--no-logo'], {
    cwd: dataDir,
    env: { ...process.env, RESTATE_LOG_FILTER: 'warn', RESTATE_DISABLE_TELEMETRY: 'true' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = once(server, 'exit');
  try {
    await waitFor(`${ADMIN}/health`, 'the Restate server to start', 60_000);

    const conversation = restate.workflow({
      name: 'Conversation',
      handlers: {
        run: async (ctx: restate.WorkflowContext, input: { maxSteps: number }): Promise<number> => {
          for (let step = 0; ; step += 1) {
            const decision: Decision = await ctx.run('model', () => loop.model(ctx.key, step, input.maxSteps));
            if (decision.kind === 'finish') return step;
            await ctx.run('tool', () => loop.tool(ctx.key, decision));
          }
        },
      },
    });
    await restate.serve({ services: [conversation], port: SERVICE_PORT });
    const registered = await fetch(`${ADMIN}/deployments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uri: `http://127.0.0.1:${SERVICE_PORT}` }),
    });
    if (!registered.ok)
      throw new Error(
        `registering the service with the Restate server: ${registered.status} ${await registered.text()}`,
      );
    await waitFor(`${INGRESS}/restate/health`, 'the Restate ingress', 60_000);
  } catch (error) {
    server.kill('SIGKILL');
    throw error;
  }

  const query = async (sql: string): Promise<Record<string, unknown>[]> => {
    const response = await fetch(`${ADMIN}/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: sql }),
    });
    if (!response.ok) throw new Error(`Restate query "${sql}": ${response.status} ${await response.text()}`);
    return ((await response.json()) as { rows: Record<string, unknown>[] }).rows;
  };

  return {
    name: 'Restate',
    async run(key, maxSteps) {
      for (let attempt = 0; ; attempt += 1) {
        const response = await fetch(`${INGRESS}/Conversation/${key}/run`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ maxSteps }),
        });
        const body = await response.text();
        if (response.ok) return;
        // the ingress learns of the new deployment shortly after its registration
        if (response.status !== 404 || attempt >= 50)
          throw new Error(`invoking Conversation/${key}/run: ${response.status} ${body}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async processes() {
      return new Map([
        ['node (Restate service, model, tool)', [process.pid]],
        ['restate-server', [server.pid!]],
      ]);
    },
    async beginWrites(scope) {
      const written = async (): Promise<number> =>
        Number(/^write_bytes:\s+(\d+)/m.exec(await readFile(`/proc/${server.pid}/io`, 'utf8'))?.[1]);
      const writtenBefore = await written();
      return async (steps, key) => {
        if (scope === 'load')
          return [
            `the server's writes to storage (write_bytes): ${Math.round(((await written()) - writtenBefore) / steps)} B per step`,
          ];
        const rows = await query(
          `SELECT j.entry_type AS entry_type, count(*) AS entries FROM sys_journal j JOIN sys_invocation i ON j.id = i.id WHERE i.target_service_name = 'Conversation' AND i.target_service_key = '${key}' GROUP BY j.entry_type ORDER BY j.entry_type`,
        );
        return rows.map(
          (row) =>
            `journal, ${String(row['entry_type'])}: ${(Number(row['entries']) / steps).toFixed(2)} entries per step`,
        );
      };
    },
    async close() {
      server.kill('SIGTERM');
      await exited;
    },
  };
}

async function waitFor(url: string, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${url})`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
