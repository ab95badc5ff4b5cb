import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { hostname, tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from '@flotilla/launcher';
import { freePort } from '@flotilla/nats-embedded';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runToExit } from '../support/run-to-exit.js';

const LAUNCHER = fileURLToPath(new URL('../../services/launcher/src/main.ts', import.meta.url));
const quiet = { info: () => undefined, warn: () => undefined, log: () => undefined };
// the services that call the default model start only with its key (no conversation here calls it)
process.env['OPENAI_API_KEY'] ||= 'sk-launcher-test-unused';

/**
 * What "the home is untouched" compares: every file outside the NATS store byte for byte (keys,
 * credentials, cli.json, the lock), and the store's streams by name. The store's files change as
 * the first system runs (its KV watchers come and go as consumers), so they are not compared.
 */
async function snapshot(home: string): Promise<Record<string, string>> {
  const store = join(home, 'nats') + sep;
  const entries = await readdir(home, { recursive: true, withFileTypes: true });
  const files: Record<string, string> = {};
  for (const entry of entries) {
    const path = join(entry.parentPath, entry.name);
    if (path.startsWith(store)) {
      if (entry.isDirectory() && entry.parentPath.endsWith(`${sep}streams`)) files[path] = 'stream';
    } else if (entry.isFile()) {
      files[path] = (await readFile(path)).toString('base64');
    }
  }
  return files;
}

async function createConversation(gatewayUrl: string, apiKey: string, id: string): Promise<void> {
  const response = await fetch(`${gatewayUrl}/v1/conversations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id, title: 'kept' }),
  });
  expect(response.status).toBe(201);
}

async function conversationStatus(gatewayUrl: string, apiKey: string, id: string): Promise<number> {
  return (await fetch(`${gatewayUrl}/v1/conversations/${id}`, { headers: { authorization: `Bearer ${apiKey}` } }))
    .status;
}

describe('./dev up: one system per home', () => {
  // the deployment's default model needs a key to start (never called here)
  beforeAll(() => {
    if (!process.env['OPENAI_API_KEY']) vi.stubEnv('OPENAI_API_KEY', 'sk-home-lock-test');
  });
  afterAll(() => {
    vi.unstubAllEnvs();
  });

  it('refuses a second launcher on a live home at once, naming the first, and changes nothing; a stale lock is taken over', async () => {
    const home = await mkdtemp(join(tmpdir(), 'flotilla-home-'));
    const config = {
      home,
      natsUrl: undefined,
      natsPort: await freePort(),
      natsNodes: 1,
      streamName: 'FLOTILLA_EVENTS',
      gatewayPort: await freePort(),
      tenant: 'local',
      tenantTaps: [],
      fromSource: false,
    };
    try {
      {
        await using first = await launch(config, quiet);
        await createConversation(first.gatewayUrl, first.apiKey, 'c-kept');
        const cliBefore = await readFile(join(home, 'cli.json'));
        const homeBefore = await snapshot(home);

        // the same ports as the first (busy): the old launcher chose free ones and went on
        const second = await runToExit(process.execPath, ['--import', 'tsx', LAUNCHER], {
          env: {
            ...process.env,
            FLOTILLA_HOME: home,
            FLOTILLA_NATS_PORT: String(config.natsPort),
            FLOTILLA_GATEWAY_PORT: String(config.gatewayPort),
          },
          timeoutMs: 30_000,
        });
        expect(second.code).toBe(1);
        expect(second.stderr.trim()).toBe(
          `[flotilla] could not start: ${home} is in use by launcher pid ${process.pid} (gateway ${first.gatewayUrl}; since ${JSON.parse(await readFile(join(home, 'launcher.lock'), 'utf8')).since}): one system per home. Use that one, stop it (Ctrl-C where it runs, or kill ${process.pid}), or give this one another home with FLOTILLA_HOME`,
        );
        expect(second.stdout).toBe('');
        // refused before the services' code is loaded (the whole process, Node's start and tsx included)
        expect(second.ms).toBeLessThan(2_000);

        // nothing changed: the CLI's configuration byte for byte, the store and every other file of the home
        expect(await readFile(join(home, 'cli.json'))).toEqual(cliBefore);
        expect(await snapshot(home)).toEqual(homeBefore);
        // and the first still serves its conversations
        expect(await conversationStatus(first.gatewayUrl, first.apiKey, 'c-kept')).toBe(200);
        await createConversation(first.gatewayUrl, first.apiKey, 'c-after');
      }
      // stopped: its lock is gone
      await expect(stat(join(home, 'launcher.lock'))).rejects.toThrow(/ENOENT/);

      // a launcher killed without stopping leaves its lock behind: the next one takes it over
      const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
        encoding: 'utf8',
      });
      await writeFile(
        join(home, 'launcher.lock'),
        JSON.stringify({
          pid: Number(dead.stdout),
          processStart: '1',
          host: hostname(),
          since: '2026-01-01T00:00:00.000Z',
          gatewayUrl: 'http://127.0.0.1:9',
          token: 'killed',
        }),
      );
      await using again = await launch({ ...config, natsPort: await freePort(), gatewayPort: await freePort() }, quiet);
      expect(JSON.parse(await readFile(join(home, 'launcher.lock'), 'utf8'))).toMatchObject({
        pid: process.pid,
        gatewayUrl: again.gatewayUrl,
      });
      expect(await conversationStatus(again.gatewayUrl, again.apiKey, 'c-kept')).toBe(200);
      expect(await conversationStatus(again.gatewayUrl, again.apiKey, 'c-after')).toBe(200);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }, 180_000);
});
