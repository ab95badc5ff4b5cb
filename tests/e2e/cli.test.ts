import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Event } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { taskMessage } from '../support/brain-server.js';
import { runToExit, type Exited } from '../support/run-to-exit.js';
import { startTestSystem } from '../support/system.js';

const FLOTILLA = fileURLToPath(new URL('../../services/cli/bin/flotilla', import.meta.url));

/** Runs the real `flotilla` executable (stdout a pipe, so never a TTY) and collects its output. */
function flotilla(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<Exited> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['FLOTILLA_URL', 'FLOTILLA_API_KEY', 'NO_COLOR']) delete env[name];
  return runToExit(FLOTILLA, args, {
    env: { ...env, ...options.env },
    cwd: options.cwd ?? tmpdir(),
    timeoutMs: options.timeoutMs ?? 60_000,
  });
}

describe('the flotilla CLI against a real gateway', () => {
  it('creates and runs a conversation, watches it finish, lists it, tails its events, reports errors, reads .flotilla/cli.json, mints keys', async () => {
    await using system = await startTestSystem({ gateway: true });
    const env = { FLOTILLA_URL: system.gatewayUrl, FLOTILLA_API_KEY: system.apiKey };
    const id = 'cli-e2e';
    const ref = { tenant: 'acme', conversation: id };
    const steps = 2;

    const task = taskMessage({ id, steps, effects: system.effects, latencyMs: 1_000 });
    const created = await flotilla(
      ['create', '--id', id, '--title', 'CLI end to end', '--tag', 'e2e', '--message', task, '--run'],
      { env },
    );
    expect(created, created.stderr).toMatchObject({ code: 0, stdout: `${id}\n` });

    // watch follows it live and returns once it comes to rest
    const watched = await flotilla(['watch', id], { env });
    expect(watched.code, watched.stderr).toBe(0);
    const lines = watched.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 3)).toEqual(['● idle (conversation created)', '● title: CLI end to end', '● tags: e2e']);
    expect(lines[3]).toBe('· agent spec: openai-chat brain (conversation created)');
    expect(lines[4]).toBe(`user: ${task}`);
    expect(lines[5]).toMatch(/^● running/);
    expect(lines.filter((line) => line.startsWith('▶ terminal: ') && line.includes(`echo "${id} `))).toHaveLength(
      steps,
    );
    expect(lines.filter((line) => line === '  ✓ terminal · exit 0')).toHaveLength(steps);
    // the final answer once, whether or not its tokens were streamed first
    expect(watched.stdout.split(`Done: ${steps} steps for ${id}.`)).toHaveLength(2);
    expect(lines.at(-1)).toMatch(/^● finished/);
    expect(watched.stdout).not.toContain('\u001b'); // no colour, no spinner on a pipe
    expect(await system.status(ref)).toBe('finished');

    const listed = await flotilla(['list', '--json'], { env });
    expect(listed.code, listed.stderr).toBe(0);
    const conversations = JSON.parse(listed.stdout) as {
      id: string;
      status: string;
      title: string | null;
      tags: string[];
    }[];
    expect(conversations.find((conversation) => conversation.id === id)).toMatchObject({
      status: 'finished',
      title: 'CLI end to end',
      tags: ['e2e'],
    });
    const table = await flotilla(['list'], { env });
    expect(table.stdout).toMatch(new RegExp(`^${id}\\s+finished\\s+CLI end to end\\s`, 'm'));

    // tail: the whole log as JSON lines with contiguous seqs, then it stops
    const log = await system.events(ref);
    const tailed = await flotilla(['tail', id], { env });
    expect(tailed.code, tailed.stderr).toBe(0);
    const events = tailed.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Event);
    expect(events.map((event) => event.seq)).toEqual(log.map((_, index) => index + 1));
    expect(events).toEqual(log);
    const fromThree = await flotilla(['tail', id, '--after-seq', '3'], { env });
    expect(
      fromThree.stdout
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as Event).seq),
    ).toEqual(log.slice(3).map((event) => event.seq));

    const actions = await flotilla(['events', id, '--type', 'action', '--json'], { env });
    expect(
      actions.stdout
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as Event).type),
    ).toEqual(Array(steps).fill('action'));
    const shown = await flotilla(['get', id], { env });
    expect(shown.stdout).toMatch(/^status: +finished$/m);

    // send --run --watch: shows the new message and the run it started, up to its end
    const sent = await flotilla(['send', id, 'one more time', '--run', '--watch'], { env });
    expect(sent.code, sent.stderr).toBe(0);
    const sentLines = sent.stdout.trimEnd().split('\n');
    expect(sentLines[0]).toBe('user: one more time');
    expect(sentLines[1]).toMatch(/^● running/);
    expect(sentLines.at(-1)).toMatch(/^● finished/);

    // errors: the gateway's code and message, exit 1; usage errors exit 2
    const missing = await flotilla(['get', 'no-such-conversation'], { env });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: conversation_not_found: /);
    const unauthorized = await flotilla(['list'], { env: { ...env, FLOTILLA_API_KEY: 'wrong-key-0123456789' } });
    expect(unauthorized.code).toBe(1);
    expect(unauthorized.stderr).toMatch(/^error: unauthorized: /);
    const usage = await flotilla(['watch'], { env });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('Usage: flotilla');

    // settings from .flotilla/cli.json in the current directory; API keys minted with the admin key
    const home = await mkdtemp(join(tmpdir(), 'flotilla-cli-'));
    try {
      await mkdir(join(home, '.flotilla'));
      await writeFile(
        join(home, '.flotilla', 'cli.json'),
        JSON.stringify({ url: system.gatewayUrl, api_key: system.apiKey }),
      );
      const info = await flotilla(['info'], { cwd: home });
      expect(info.code, info.stderr).toBe(0);
      expect(info.stdout).toMatch(/^flotilla-gateway /);
      expect(info.stdout).toMatch(/^tenant: +acme$/m);

      const minted = await flotilla(['keys', 'create', '--tenant', 'acme', '--name', 'cli-test'], {
        cwd: home,
        env: { FLOTILLA_API_KEY: system.adminKey },
      });
      expect(minted.code, minted.stderr).toBe(0);
      const key = minted.stdout.trim();
      expect(key.length).toBeGreaterThan(16);
      const other = await flotilla(['create', '--title', 'with a minted key'], {
        cwd: home,
        env: { FLOTILLA_API_KEY: key },
      });
      expect(other.code, other.stderr).toBe(0);
      const all = await flotilla(['list', '--json'], { cwd: home });
      expect((JSON.parse(all.stdout) as { id: string }[]).map((conversation) => conversation.id)).toEqual(
        expect.arrayContaining([id, other.stdout.trim()]),
      );
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }, 180_000);

  it('stops at waiting_for_confirmation showing the pending actions; approve runs them, reject answers them', async () => {
    await using system = await startTestSystem({ gateway: true, agent: { confirmation: { mode: 'always' } } });
    const env = { FLOTILLA_URL: system.gatewayUrl, FLOTILLA_API_KEY: system.apiKey };
    const id = 'cli-confirm';
    const created = await flotilla(
      ['create', '--id', id, '--message', taskMessage({ id, steps: 2, effects: system.effects }), '--run'],
      { env },
    );
    expect(created.code, created.stderr).toBe(0);

    const hint = [`  approve: flotilla approve ${id}`, `  reject:  flotilla reject ${id} --reason "…"`];
    const waiting = await flotilla(['watch', id], { env });
    expect(waiting.code, waiting.stderr).toBe(0);
    const waitingLines = waiting.stdout.trimEnd().split('\n');
    expect(waitingLines.slice(-5)).toEqual([
      '● waiting for confirmation (actions need confirmation)',
      '? 1 action awaiting confirmation:',
      expect.stringMatching(new RegExp(`^  ▶ terminal: .*echo "${id} 0 0".* \\[low risk\\]$`)),
      ...hint,
    ]);

    const approved = await flotilla(['approve', id, '--watch'], { env });
    expect(approved.code, approved.stderr).toBe(0);
    const approvedLines = approved.stdout.trimEnd().split('\n');
    expect(approvedLines[0]).toBe('✓ approved 1 action');
    expect(approvedLines).toContain('  ✓ terminal · exit 0');
    expect(approvedLines.slice(-3)).toEqual([expect.stringContaining(`echo "${id} 1 0"`), ...hint]);

    const rejected = await flotilla(['reject', id, '--reason', 'not this one', '--watch'], { env });
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(rejected.stdout.trimEnd().split('\n')).toEqual([
      '  ✗ rejected terminal: not this one',
      expect.stringMatching(/^● idle/),
    ]);
    // only the approved action ran
    expect(await system.readEffects()).toEqual([`${id} 0 0`]);

    const again = await flotilla(['approve', id], { env });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error: (not_waiting|nothing_pending): /);
  }, 150_000);
});
