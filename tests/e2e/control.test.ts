import { interruptCommand, runCommand } from '@flotilla/agent';
import { conversationState } from '@flotilla/state';
import { publishInterrupt } from '@flotilla/runtime';
import { describe, expect, it } from 'vitest';
import { basicViolations } from '../support/log-checks.js';
import { startTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('control across processes', () => {
  it('interrupt cancels a slow streaming LLM call within 0.5 s, pauses, and a later run continues', async () => {
    await using system = await startTestSystem();
    const ref = { tenant: 'acme', conversation: 'interrupt-me' };
    const slowUntil = Date.now() + 6_000;
    await system.start(ref, { id: 'interrupt-me', steps: 1, chunks: 100, chunkDelayMs: 200, slowUntil });
    await expect
      .poll(() => system.brain.calls.some((call) => call.task === 'interrupt-me' && call.closedAt === undefined), {
        timeout: 20_000,
      })
      .toBe(true);
    await sleep(500); // well into the stream
    const interruptedAt = Date.now();
    await system.command(ref, (events) => interruptCommand(conversationState(events), ref, 'stop now'));
    publishInterrupt(system.nc, ref);
    await expect
      .poll(() => system.brain.calls.find((call) => call.task === 'interrupt-me')?.closedAt, { timeout: 5_000 })
      .toBeDefined();
    const call = system.brain.calls.find((candidate) => candidate.task === 'interrupt-me')!;
    const cancelMs = call.closedAt! - interruptedAt;
    console.log(`interrupt: LLM call closed ${cancelMs} ms after the interrupt was appended`);
    expect(call.completed).toBe(false);
    expect(cancelMs).toBeLessThan(500);
    expect(await system.status(ref)).toBe('paused');
    // nothing the interrupted step produced lands
    await sleep(1_000);
    expect((await system.events(ref)).some((event) => event.type === 'action')).toBe(false);

    await sleep(Math.max(0, slowUntil - Date.now()));
    await system.command(ref, (events) => runCommand(conversationState(events), ref));
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 30_000);
    expect(await system.status(ref)).toBe('finished');
    await expectAudited(system.log, ref);
  }, 90_000);

  it('survives nats-server SIGKILL and restart mid-run: services reconnect and conversations finish cleanly', async () => {
    await using system = await startTestSystem({ stepWorkers: 2, toolRunners: 2 });
    const refs = Array.from({ length: 12 }, (_, index) => ({ tenant: 'acme', conversation: `nats-crash-${index}` }));
    await Promise.all(refs.map((ref) => system.start(ref, { id: ref.conversation, steps: 6, sleep: 0.2 })));
    await sleep(2_000);
    await system.nats.kill('SIGKILL');
    await sleep(1_500);
    await system.nats.restart();
    await system.waitForStatus(refs, ['finished', 'error', 'stuck'], 120_000);
    for (const ref of refs) {
      expect(await system.status(ref)).toBe('finished');
      expect(basicViolations(await system.events(ref))).toEqual([]);
      await expectAudited(system.log, ref);
    }
    expect(system.processes.every((child) => child.restarts === 0)).toBe(true);
  }, 180_000);

  it('without a condenser, a conversation waiting for a condensation shows in the step worker metrics', async () => {
    await using system = await startTestSystem({
      condensers: 0,
      agent: { condenser: { maxEvents: 16, keepFirst: 2 } },
      env: { FLOTILLA_CONDENSATION_WARN_MS: '1000' },
    });
    const ref = { tenant: 'acme', conversation: 'no-condenser' };
    await system.start(ref, { id: 'no-condenser', steps: 24 });
    const metric = async (name: string): Promise<number> => {
      const text = await (await fetch(`${system.healthUrls.get('step-worker-1')}/metrics`)).text();
      const line = text
        .split('\n')
        .find((candidate) => candidate.startsWith(`${name}{`) || candidate.startsWith(`${name} `));
      return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : Number.NaN;
    };
    await expect.poll(() => metric('flotilla_condensation_waiting'), { timeout: 60_000, interval: 250 }).toBe(1);
    await expect
      .poll(() => metric('flotilla_condensation_oldest_wait_seconds'), { timeout: 10_000, interval: 250 })
      .toBeGreaterThanOrEqual(1);
    const events = await system.events(ref);
    expect(events.at(-1)?.type).toBe('condensation_request');
    expect(await system.status(ref)).toBe('running');
  }, 120_000);

  it('condenses a long conversation with the condenser service; the step continues after each condensation', async () => {
    await using system = await startTestSystem({
      condensers: 1,
      agent: { condenser: { maxEvents: 16, keepFirst: 2 } },
    });
    const ref = { tenant: 'acme', conversation: 'long-one' };
    await system.start(ref, { id: 'long-one', steps: 24 });
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 120_000);
    expect(await system.status(ref)).toBe('finished');
    const events = await system.events(ref);
    const condensations = events.filter((event) => event.type === 'condensation');
    expect(condensations.length).toBeGreaterThanOrEqual(2);
    expect(events.filter((event) => event.type === 'condensation_request').length).toBe(condensations.length);
    expect(events.filter((event) => event.type === 'action')).toHaveLength(24);
    // every condensation is followed by a step (an llm_usage of purpose step)
    for (const condensation of condensations) {
      expect(
        events.some((event) => event.seq > condensation.seq && event.type === 'llm_usage' && event.purpose === 'step'),
      ).toBe(true);
    }
    await expectAudited(system.log, ref);
  }, 150_000);

  it('comes to rest when the summarizer answers without text, then with errors, then past its context: a placeholder condensation, visible attempts, the run finishes', async () => {
    // one summary request answered by a tool call, then server errors for every retry, then overflows for every shortening
    const summaries = [
      'tool_call',
      ...Array<'error'>(4).fill('error'),
      ...Array<'overflow'>(8).fill('overflow'),
    ] as const;
    await using system = await startTestSystem({
      condensers: 1,
      summaries,
      agent: { condenser: { maxEvents: 16, keepFirst: 2 } },
    });
    const ref = { tenant: 'acme', conversation: 'hostile-summarizer' };
    const started = Date.now();
    await system.start(ref, { id: 'hostile-summarizer', steps: 20 });
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 120_000).catch(async (error: unknown) => {
      console.log(
        'DEBUG',
        JSON.stringify(
          (await system.events(ref)).map((event) => [
            event.seq,
            event.type,
            'code' in event ? event.code : '',
            'detail' in event ? event.detail : '',
          ]),
        ),
        JSON.stringify(system.brain.calls.map((call) => call.task)),
      );
      throw error;
    });
    expect(await system.status(ref)).toBe('finished');
    const events = await system.events(ref);
    const attempts = events.filter(
      (event) => event.type === 'conversation_error' && event.code === 'condensation_attempt_failed',
    );
    expect(attempts.map((event) => (event.type === 'conversation_error' ? event.detail : ''))).toEqual([
      expect.stringMatching(
        /^Summary attempt 1 of 3 failed \(.*no text \(it called a tool instead\)\); next: a stricter prompt\.$/,
      ),
      expect.stringMatching(
        /^Summary attempt 2 of 3 failed \(.*\); next: the stricter prompt over about half the range\.$/,
      ),
      expect.stringMatching(
        /^Summary attempt 3 of 3 failed \(.*overflowed.*\); next: a placeholder instead of a model summary\.$/,
      ),
    ]);
    const condensations = events.filter((event) => event.type === 'condensation');
    expect(condensations[0]!.type === 'condensation' ? (condensations[0]!.summary ?? '') : '').toContain(
      'No summary: the summarizer failed on every attempt',
    );
    // later condensations (the summarizer answers again) are real summaries
    expect(
      condensations
        .slice(1)
        .some((event) => event.type === 'condensation' && (event.summary ?? '').includes('PROGRESS=')),
    ).toBe(true);
    expect(Date.now() - started).toBeLessThan(120_000);
    await expectAudited(system.log, ref);
  }, 150_000);

  it('ends a run whose model reply is too large to store with a visible reason, while another conversation keeps its pace', async () => {
    await using system = await startTestSystem();
    const huge = { tenant: 'acme', conversation: 'huge-reply' };
    const calm = { tenant: 'acme', conversation: 'calm-neighbour' };
    await system.start(huge, { id: 'huge-reply', steps: 1, finalAnswerChars: 3_000_000 });
    await system.start(calm, { id: 'calm-neighbour', steps: 3 });
    await system.waitForStatus([huge, calm], ['finished', 'error', 'stuck'], 60_000);
    expect(await system.status(calm)).toBe('finished');
    expect(await system.status(huge)).toBe('error');
    const error = (await system.events(huge)).find((event) => event.type === 'conversation_error');
    expect(error).toMatchObject({ code: 'reply_too_large' });
    await expectAudited(system.log, huge);
  }, 90_000);
});
