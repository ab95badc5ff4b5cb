// What a conversation's terminal cannot reach (service secrets, other workspaces, the host, the
// service ports), and a secret set over the API that never leaks. (Limits and a sandbox's life:
// sandbox-limits.test.ts.)
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FlotillaClient } from '@flotilla/client';
import type { NodeWebSocket } from '@flotilla/client/node';
import type { Event } from '@flotilla/events';
import { generateSecretsKey } from '@flotilla/secrets';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { taskMessage } from '../support/brain-server.js';
import { startTestSystem } from '../support/system.js';
import { observationTexts, runCommands } from './sandbox-support.js';

const PROBE_PORT_SCRIPT = (ports: readonly number[], host: string): string =>
  `for port in ${ports.join(' ')}; do if (exec 3<>/dev/tcp/${host}/$port) 2>/dev/null; then echo "OPEN ${host}:$port"; else echo "closed ${host}:$port"; fi; done`;

describe.each(['none', 'egress'])('from inside a conversation’s terminal (network %s)', (network) => {
  it('sees no service secret, no other workspace, no service data, no host outside the workspace, and no service port', async () => {
    // as a deployment's environment gives it: every service inherits it, the tool runner must not
    process.env['OPENAI_API_KEY'] = 'sk-tool-runner-must-not-have-this';
    await using system = await startTestSystem({ gateway: true, toolRunnerEnv: { FLOTILLA_SANDBOX_NETWORK: network } });
    delete process.env['OPENAI_API_KEY'];
    const other = { tenant: 'globex', conversation: 'neighbour' };
    await runCommands(system, other, ['echo neighbour-private > private.txt']);
    const otherWorkspace = join(system.home, 'workspaces', 'globex', 'neighbour');
    expect(await readFile(join(otherWorkspace, 'private.txt'), 'utf8')).toBe('neighbour-private\n');

    const natsPort = Number(new URL(system.nats.url).port);
    const servicePorts = [...system.healthUrls.values()].map((url) => Number(new URL(url).port));
    const marker = `outside-${Date.now()}`;
    const ref = { tenant: 'acme', conversation: `probe-${network}` };
    const [env, files, writes, loopback, slirpHost] = await runCommands(system, ref, [
      'env',
      `pwd; ls -a /; ls -a ..; ls ${system.home} 2>&1; cat ${system.home}/nats-users/tool-runner.password 2>&1; cat ${otherWorkspace}/private.txt 2>&1; find / \\( -path /proc -o -path /sys \\) -prune -o -name private.txt -print 2>/dev/null | sed 's/^/FOUND /' | head -3; echo files-done`,
      `echo x > /${marker} 2>&1; echo x > /tmp/${marker} && echo tmp-ok; echo x > ${system.home}/${marker} 2>&1; echo x > /usr/${marker} 2>&1; echo x > /etc/${marker} 2>&1; echo inside > in-workspace.txt; echo writes-done`,
      PROBE_PORT_SCRIPT([natsPort, ...servicePorts], '127.0.0.1'),
      PROBE_PORT_SCRIPT([natsPort, ...servicePorts], '10.0.2.2'),
    ]);

    // the environment is built from scratch
    const names = env!
      .split('\n')
      .filter((line) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(line))
      .map((line) => line.slice(0, line.indexOf('=')));
    expect(names).toContain('PATH');
    expect(
      names.filter((name) => name.startsWith('FLOTILLA_') || name.startsWith('NATS') || name.endsWith('_API_KEY')),
    ).toEqual([]);
    expect(env).not.toContain(system.nats.url);
    expect(env).not.toContain(`:${natsPort}`);
    expect(env).not.toContain('sk-tool-runner-must-not-have-this');
    expect(env).not.toContain('test-key');
    // nor any NATS credential: the runner's own, or another's (the password files are outside the sandbox)
    for (const user of system.users.values()) {
      expect(env).not.toContain(user.password);
      expect(files).not.toContain(user.password);
    }
    // the tool runner itself was not given the model's key either
    const runner = system.processes.find((process) => process.name.startsWith('tool-runner'))!;
    const runnerEnvironment = await readFile(`/proc/${runner.pid}/environ`, 'utf8');
    expect(runnerEnvironment).not.toContain('sk-tool-runner-must-not-have-this');
    expect(runnerEnvironment).not.toContain('FLOTILLA_AGENT=');

    // its own workspace at /workspace, nothing else of the host
    expect(files).toContain('/workspace\n');
    expect(files).not.toContain('neighbour-private');
    expect(files).not.toContain('FOUND');
    expect(files).not.toContain('api-key');
    expect(files).toContain('files-done');

    // writes outside the workspace never reach the host
    expect(writes).toContain('writes-done');
    expect(writes).toContain('tmp-ok'); // a private /tmp
    for (const path of [`/${marker}`, `/tmp/${marker}`, join(system.home, marker), `/usr/${marker}`, `/etc/${marker}`])
      expect(existsSync(path), path).toBe(false);
    expect(await readFile(join(system.home, 'workspaces', 'acme', ref.conversation, 'in-workspace.txt'), 'utf8')).toBe(
      'inside\n',
    );

    // no service port on the host's loopback, whichever way it is tried
    for (const probe of [loopback!, slirpHost!]) {
      expect(probe).not.toContain('OPEN');
      expect(probe.match(/closed /g)?.length).toBe(servicePorts.length + 1);
    }

    // the gateway tells clients how the agent is sandboxed
    const sandboxInfo = async (): Promise<unknown> =>
      (
        (await (
          await fetch(`${system.gatewayUrl}/v1/server-info`, { headers: { authorization: `Bearer ${system.apiKey}` } })
        ).json()) as { sandbox: unknown }
      ).sandbox;
    await expect
      .poll(sandboxInfo, { timeout: 15_000, interval: 500 })
      .toEqual({ runners: 1, kinds: ['bwrap'], networks: [network], unsandboxed_runners: 0 });
  }, 180_000);
});

describe('a secret set over the API', () => {
  it('reaches the command that uses it, and neither its value nor what one command makes of it (base64 at any offset, hex, reversed, upper-cased, URL- and JSON-escaped) appears anywhere: not the store, the logs, the socket or the model’s requests', async () => {
    const key = generateSecretsKey();
    await using system = await startTestSystem({
      gateway: true,
      recordModelRequests: true,
      captureLogs: true,
      env: { FLOTILLA_LOG_LEVEL: 'debug' },
      gatewayEnv: { FLOTILLA_SECRETS_KEY: key },
      toolRunnerEnv: { FLOTILLA_SECRETS_KEY: key },
    });
    // characters URL- and JSON-escaping change, so each of those forms differs from the value
    const value = `tok/${randomBytes(12).toString('hex')}+"q`;
    const frames: string[] = [];
    class RecordingSocket extends WebSocket {
      constructor(url: string) {
        super(url);
        this.on('message', (data: Buffer) => frames.push(data.toString('utf8')));
      }
    }
    const client = new FlotillaClient({
      baseUrl: system.gatewayUrl,
      apiKey: system.apiKey,
      WebSocket: RecordingSocket as unknown as typeof NodeWebSocket,
    });
    await client.createConversation({ id: 'secretive' });
    await client.setConversationSecret('secretive', 'MY_TOKEN', value);
    expect(await client.listConversationSecrets('secretive')).toEqual(['MY_TOKEN']);
    const events: Event[] = [];
    const subscription = client.subscribe('secretive', { onEvent: (event) => events.push(event) });
    await subscription.ready();
    const commands = [
      'echo "$MY_TOKEN"',
      'env | grep MY_TOKEN',
      `printf '#!/bin/sh\\necho "the token is $MY_TOKEN"\\n' > show.sh; sh show.sh`,
      'printf %s "$MY_TOKEN" | base64',
      // too long for an observation: the whole output is saved in the conversation's private directory
      'for i in $(seq 3000); do echo "line $i of a long output: $MY_TOKEN"; done',
      // what one shell command makes of it (docs/security.md, "Masking")
      'printf %s "$MY_TOKEN" | rev',
      `printf %s "$MY_TOKEN" | xxd -p | tr -d '\\n'`,
      `printf %s "$MY_TOKEN" | xxd -p -u | tr -d '\\n'`,
      'echo "${MY_TOKEN^^}"',
      'printf %s "x$MY_TOKEN" | base64 -w0',
      `jq -rn --arg t "$MY_TOKEN" '$t|@uri'`,
      `jq -cn --arg t "$MY_TOKEN" '{t:$t}'`,
    ];
    await client.sendMessage(
      'secretive',
      taskMessage({ id: 'secretive', steps: commands.length, effects: system.effects, commands }),
      { run: true },
    );
    const ref = { tenant: 'acme', conversation: 'secretive' };
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 90_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    subscription.close();
    expect(await system.status(ref)).toBe('finished');

    const outputs = observationTexts(await system.events(ref));
    expect(outputs[0]).toContain('<secret:MY_TOKEN>');
    expect(outputs[1]).toContain('MY_TOKEN=<secret:MY_TOKEN>');
    expect(outputs[2]).toContain('the token is <secret:MY_TOKEN>');
    expect(outputs[3]).toContain('<secret:MY_TOKEN>');
    expect(outputs[4]).toContain('<response clipped');
    expect(outputs[4]).toContain('<secret:MY_TOKEN>');
    for (const output of outputs.slice(5)) expect(output).toContain('<secret:MY_TOKEN>');
    expect(
      (await system.events(ref)).some((event) => event.type === 'secret_changed' && event.name === 'MY_TOKEN'),
    ).toBe(true);
    expect(events.some((event) => event.type === 'observation')).toBe(true);

    const hex = Buffer.from(value).toString('hex');
    const forms: Record<string, string> = {
      'the value': value,
      'its base64': Buffer.from(value).toString('base64'),
      // the middle of the base64 of "x" and the value: what base64 at another offset holds of it
      'its base64 at another offset': Buffer.from(`x${value}`).toString('base64').slice(4, -4),
      'its hex': hex,
      'its upper-case hex': hex.toUpperCase(),
      'it reversed': [...value].reverse().join(''),
      'it upper-cased': value.toUpperCase(),
      'it URL-escaped': encodeURIComponent(value),
      'it JSON-escaped': JSON.stringify(value).slice(1, -1),
    };
    const leaks = (where: string, text: string): string[] =>
      Object.entries(forms)
        .filter(([, form]) => text.includes(form))
        .map(([name]) => `${where} holds ${name}`);
    const found: string[] = [];
    // the JetStream store, and everything the tool runner keeps of the conversation (saved outputs)
    const kept = [
      ...(await listFiles(join(system.home, 'nats'))),
      ...(await listFiles(join(system.home, 'conversations'))),
    ];
    expect(kept.some((file) => file.includes('terminal_output_'))).toBe(true);
    for (const file of kept) found.push(...leaks(file, (await readFile(file)).toString('latin1')));
    found.push(...leaks('a service log line', system.logLines.join('\n')));
    found.push(...leaks('a WebSocket frame', frames.join('\n')));
    found.push(...leaks('a model request', system.brain.requests.join('\n')));
    expect(found).toEqual([]);
    expect(system.logLines.length).toBeGreaterThan(0);
    expect(frames.length).toBeGreaterThan(0);
    expect(system.brain.requests.join('\n')).toContain('<secret:MY_TOKEN>');
  }, 120_000);
});

async function listFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}
