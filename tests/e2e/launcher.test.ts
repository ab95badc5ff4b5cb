import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@flotilla/nats-embedded';
import { connect } from '@nats-io/transport-node';
import { launch } from '@flotilla/launcher';
import { unmountWorkspacesUnder } from '@flotilla/sandbox';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runToExit, type Exited } from '../support/run-to-exit.js';

const LAUNCHER = fileURLToPath(new URL('../../services/launcher/src/main.ts', import.meta.url));

// the services that call the default model start only with its key (no conversation here calls it)
process.env['OPENAI_API_KEY'] ||= 'sk-launcher-test-unused';

/** Runs `npm start`'s command with this environment until it exits. */
function runLauncher(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Exited> {
  return runToExit(process.execPath, ['--import', 'tsx', LAUNCHER], { env: { ...process.env, ...env }, timeoutMs });
}

describe('./dev up (the launcher on its embedded nats-server)', () => {
  it('refuses anonymous clients; every service runs with its own generated credential, kept owner-only in the home', async () => {
    const home = await mkdtemp(join(tmpdir(), 'flotilla-launcher-'));
    const lines: string[] = [];
    const output = {
      info: (line: string) => lines.push(line),
      warn: (line: string) => lines.push(`warning: ${line}`),
      log: () => undefined,
    };
    // the operator's own keys, as docs/operations.md says they are provisioned at start
    const operatorKey = 'acme-operator-key-0123456789abcdef';
    const operatorAdminKey = 'operator-admin-key-0123456789abcdef';
    process.env['FLOTILLA_API_KEYS'] = `acme:${operatorKey}`;
    process.env['FLOTILLA_ADMIN_KEY'] = operatorAdminKey;
    try {
      await using system = await launch(
        {
          home,
          natsUrl: undefined,
          natsPort: await freePort(),
          natsNodes: 1,
          streamName: 'FLOTILLA_EVENTS',
          gatewayPort: await freePort(),
          tenant: 'local',
          tenantTaps: ['acme'],
          fromSource: false,
        },
        output,
      );
      await expect(connect({ servers: system.natsUrl, maxReconnectAttempts: 0 })).rejects.toThrow(/authorization/i);
      const users = join(home, 'nats-users');
      expect((await stat(users)).mode & 0o777).toBe(0o700);
      for (const user of [
        'gateway',
        'step-worker',
        'tool-runner',
        'condenser',
        'projector',
        'webhooks',
        'admin',
        'tap',
        'tap-acme',
      ]) {
        expect((await stat(join(users, `${user}.password`))).mode & 0o777, user).toBe(0o600);
      }
      // the services are ready (launch waits for /ready of each): they connected as themselves
      const response = await fetch(`${system.gatewayUrl}/v1/server-info`, {
        headers: { authorization: `Bearer ${system.apiKey}` },
      });
      expect(response.status).toBe(200);
      // the operator's key works beside the local one, for its own tenant; its admin key mints keys
      const operator = await fetch(`${system.gatewayUrl}/v1/server-info`, {
        headers: { authorization: `Bearer ${operatorKey}` },
      });
      expect([operator.status, ((await operator.json()) as { tenant: string }).tenant]).toEqual([200, 'acme']);
      const minted = await fetch(`${system.gatewayUrl}/v1/admin/api-keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${operatorAdminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ tenant: 'acme', name: 'ci' }),
      });
      expect(minted.status).toBe(201);
      // the tap's credential reads, and the admin's too; a wrong password does not
      const tap = await connect({
        servers: system.natsUrl,
        user: 'tap',
        pass: (await readFile(join(users, 'tap.password'), 'utf8')).trim(),
        inboxPrefix: '_INBOX.tap',
        maxReconnectAttempts: 0,
      });
      await tap.close();
      await expect(
        connect({ servers: system.natsUrl, user: 'admin', pass: 'guess', maxReconnectAttempts: 0 }),
      ).rejects.toThrow(/authorization/i);
      // tap and audit find the tap's URL and credential (never the admin's) in tap.json, owner-only
      expect((await stat(join(home, 'tap.json'))).mode & 0o777).toBe(0o600);
      expect(JSON.parse(await readFile(join(home, 'tap.json'), 'utf8'))).toEqual({
        nats_url: system.natsUrl,
        user: 'tap',
        password_file: join(users, 'tap.password'),
      });
      expect(lines.join('\n')).toContain('no anonymous clients');
      expect(lines.join('\n')).not.toMatch(/password[^s]*:[^\n]*[A-Za-z0-9_-]{40}/);
    } finally {
      delete process.env['FLOTILLA_API_KEYS'];
      delete process.env['FLOTILLA_ADMIN_KEY'];
      await rm(home, { recursive: true, force: true });
    }
  }, 120_000);

  it('stops at once, with one message naming the variable, when a setting is wrong', async () => {
    const home = await mkdtemp(join(tmpdir(), 'flotilla-launcher-'));
    try {
      const run = await runLauncher(
        {
          FLOTILLA_HOME: home,
          FLOTILLA_LLM_PROVIDER: 'opanai',
          FLOTILLA_NATS_PORT: String(await freePort()),
          FLOTILLA_GATEWAY_PORT: String(await freePort()),
        },
        30_000,
      );
      expect(run.code).toBe(1);
      const lines = run.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^\[flotilla\] could not start: invalid agent settings: FLOTILLA_LLM_PROVIDER: .*\(got "opanai"\)$/,
      );
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }, 60_000);

  it("stops at start, naming the variable, when the default model's key is nowhere", async () => {
    const home = await mkdtemp(join(tmpdir(), 'flotilla-launcher-'));
    try {
      const run = await runLauncher(
        {
          FLOTILLA_HOME: home,
          OPENAI_API_KEY: '',
          FLOTILLA_LLM_API_KEY_ENV: '',
          FLOTILLA_NATS_PORT: String(await freePort()),
          FLOTILLA_GATEWAY_PORT: String(await freePort()),
        },
        90_000,
      );
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        /could not start: (step-worker|condenser) could not start: .*the default model \(openai-chat gpt-4o-mini\) reads its key from OPENAI_API_KEY, which is not set/,
      );
      expect(run.stdout.match(/restarting/g) ?? []).toEqual([]);
    } finally {
      // a tool runner stopped during its start-up disk probe leaves the probe's filesystem mounted
      await unmountWorkspacesUnder(home);
      await rm(home, { recursive: true, force: true });
    }
  }, 120_000);

  it('stops, naming the service and its reason, when a service fails at start (no restart loop)', async () => {
    const home = await mkdtemp(join(tmpdir(), 'flotilla-launcher-'));
    try {
      const run = await runLauncher(
        {
          FLOTILLA_HOME: home,
          FLOTILLA_GATEWAY_RATE_LIMIT: 'fast',
          FLOTILLA_NATS_PORT: String(await freePort()),
          FLOTILLA_GATEWAY_PORT: String(await freePort()),
        },
        90_000,
      );
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/could not start: gateway could not start: .*FLOTILLA_GATEWAY_RATE_LIMIT/);
      expect(run.stdout.match(/restarting/g) ?? []).toEqual([]);
    } finally {
      // a tool runner stopped during its start-up disk probe leaves the probe's filesystem mounted
      await unmountWorkspacesUnder(home);
      await rm(home, { recursive: true, force: true });
    }
  }, 120_000);
});
