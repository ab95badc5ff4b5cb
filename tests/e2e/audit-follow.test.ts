import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { userEnvironment } from '@flotilla/bus';
import { draftEvent } from '@flotilla/events';
import { appendWithRetry } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import { startTestSystem } from '../support/system.js';

const CLI = fileURLToPath(new URL('../../libs/auditor/src/cli.ts', import.meta.url));

/** A Prometheus sample's value (0 when absent). */
function sample(metrics: string, name: string, labels = ''): number {
  const line = metrics.split('\n').find((candidate) => candidate.startsWith(`${name}{`) && candidate.includes(labels));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('continuous audit (flotilla audit --follow)', () => {
  it('a forged commit breaking an invariant shows as a violation metric and a log line; clean conversations raise none; a nats-server restart is outlived', async () => {
    await using system = await startTestSystem();
    const clean = [1, 2, 3].map((index) => ({ tenant: 'acme', conversation: `clean-${index}` }));
    await Promise.all(clean.map((ref) => system.start(ref, { id: ref.conversation, steps: 2 })));

    // the auditor as its own process, with the read-only tap credential
    const tap = system.users.get('tap')!;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', CLI, '--follow', '--nats', system.natsUrl, '--health-port', '0', '--settle-ms', '500'],
      {
        env: { PATH: process.env['PATH'], ...userEnvironment(tap) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const lines: Record<string, unknown>[] = [];
    let stderr = '';
    let buffered = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      const complete = buffered.split('\n');
      buffered = complete.pop()!;
      for (const line of complete) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => void (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await expect
        .poll(() => lines.find((line) => line['msg'] === 'auditor following the stream'), {
          timeout: 30_000,
          message: `the auditor did not start: ${stderr}`,
        })
        .toBeDefined();
      const health = String(lines.find((line) => line['msg'] === 'auditor following the stream')!['health']);
      const metrics = async (): Promise<string> => (await fetch(`${health}/metrics`)).text();

      await system.waitForStatus(clean, ['finished', 'error', 'stuck'], 60_000);
      let commits = 0;
      for (const ref of clean) for await (const _commit of system.log.read(ref)) commits += 1;
      await expect
        .poll(async () => sample(await metrics(), 'flotilla_audit_commits_total'), { timeout: 20_000 })
        .toBeGreaterThanOrEqual(commits);
      expect(sample(await metrics(), 'flotilla_audit_conversations')).toBe(3);

      // outlive a restart of nats-server, then forge: a step appended to a finished conversation (with the admin connection)
      await system.nats.restart();
      const victim = clean[0]!;
      const agent = { ...victim, source: 'agent' as const };
      const forged = (await appendWithRetry(system.log, victim, () => [
        draftEvent(agent, 'message', {
          role: 'assistant',
          content: [{ type: 'text', text: 'a step nobody asked for' }],
        }),
      ]))!;

      await expect
        .poll(async () => sample(await metrics(), 'flotilla_audit_violations_total', 'rule="step-while-not-running"'), {
          timeout: 30_000,
        })
        .toBe(1);
      // the line reaches this process through the auditor's stdout a moment after the metric counts it
      await expect
        .poll(() => lines.filter((line) => line['msg'] === 'invariant violated'), { timeout: 5_000 })
        .toEqual([
          expect.objectContaining({
            level: 50,
            tenant: 'acme',
            conversation: victim.conversation,
            rule: 'step-while-not-running',
            streamSeq: forged.streamSeq,
            seq: forged.firstSeq,
          }),
        ]);
      // nothing else, after the quiet period's end-of-log checks too
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const text = await metrics();
      const total = text
        .split('\n')
        .filter((line) => line.startsWith('flotilla_audit_violations_total{'))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
      expect(total).toBe(1);
      expect(lines.filter((line) => line['msg'] === 'invariant violated')).toHaveLength(1);
      expect(sample(text, 'flotilla_audit_read_retries_total')).toBeGreaterThan(0);
      expect(sample(text, 'flotilla_audit_lag_messages')).toBe(0);
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
    // the tap credential read everything it needed: nats-server reported no permission violation
    expect(system.violations).toEqual([]);
  }, 180_000);
});
