import { replayRequests } from '@flotilla/agent';
import type { ConversationSpec, ServerInfo } from '@flotilla/api';
import type { Event } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { startBrainServer, taskMessage, type BrainServer } from '../support/brain-server.js';
import { startOutageServer, type OutageServer } from '../support/outage-server.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

const RETRY = { maxAttempts: 2, initialDelayMs: 50, maxDelayMs: 100 };
const AT_REST = ['finished', 'error', 'stuck', 'waiting_for_confirmation'] as const;

/** Each primary profile of these tests, its provider, and the outage its server shows every request. */
const PRIMARIES = {
  down: { provider: 'openai-chat', outage: { status: 503, family: 'openai', kind: 'server_error' } },
  limited: {
    provider: 'openai-responses',
    outage: { status: 429, family: 'openai', kind: 'rate_limit', headers: { 'retry-after-ms': '50' } },
  },
  overloaded: { provider: 'anthropic', outage: { status: 529, family: 'anthropic', kind: 'overloaded' } },
  hanging: { provider: 'openai-chat', outage: 'hang' },
  refusing: { provider: 'openai-chat', outage: { status: 401, family: 'openai', kind: 'auth' } },
  doomed: { provider: 'openai-chat', outage: { status: 502, family: 'openai', kind: 'server_error' } },
} as const;

/**
 * The operator's catalog: a profile per outage, each falling back on `backup` (the brain, a
 * working model server), but `doomed`, which falls back on `limited`: every provider it has is out.
 */
function catalogFor(outages: OutageServer, brain: BrainServer): Record<string, unknown> {
  const profiles = Object.fromEntries(
    Object.entries(PRIMARIES).map(([name, { provider }]) => [
      name,
      {
        provider,
        model: `${name}-model`,
        baseURL: outages.baseURL(name, provider),
        apiKey: `${name}-key`,
        timeoutMs: name === 'hanging' ? 1_500 : 60_000,
        retry: RETRY,
      },
    ]),
  );
  return {
    profiles: {
      ...profiles,
      backup: {
        provider: 'openai-chat',
        model: 'backup-brain',
        baseURL: brain.baseURL,
        apiKey: 'backup-key',
        timeoutMs: 60_000,
        retry: RETRY,
      },
    },
    fallbacks: {
      down: ['backup'],
      limited: ['backup'],
      overloaded: ['backup'],
      hanging: ['backup'],
      refusing: ['backup'],
      doomed: ['limited'],
    },
  };
}

/** The request bodies of conversation `id` among `bodies` (its task, JSON inside the body's JSON, names it), each once. */
function bodiesOf(bodies: readonly string[], id: string): string[] {
  return [...new Set(bodies.filter((body) => body.includes(`\\"id\\":\\"${id}\\"`)))];
}

/** How many of `bodies` are conversation `id`'s, each attempt counted. */
function attemptsOf(bodies: readonly string[], id: string): number {
  return bodies.filter((body) => body.includes(`\\"id\\":\\"${id}\\"`)).length;
}

async function metricLines(system: RunningTestSystem, name: string): Promise<string[]> {
  const text = await (await fetch(`${system.healthUrls.get('step-worker-1')}/metrics`)).text();
  return text.split('\n').filter((line) => line.startsWith(`${name}{`));
}

describe('model fallback, through the services', () => {
  it("moves a step its model's provider cannot make (503, 429, 529 overloaded, no answer) to the fallback after the model's retries; the step's llm_usage names the fallback, and replay rebuilds what the fallback received", async () => {
    await using outages = await startOutageServer(
      Object.fromEntries(Object.entries(PRIMARIES).map(([name, { outage }]) => [name, outage])),
    );
    await using backup = await startBrainServer({ record: true });
    await using system = await startTestSystem({
      gateway: true,
      recordModelRequests: true,
      captureLogs: true,
      catalog: catalogFor(outages, backup),
    });

    // the operator's chains, as clients see them, and as each conversation's spec holds them
    const info = (await system.api('GET', '/server-info')).body as ServerInfo;
    expect(info.agents.profiles.find((profile) => profile.name === 'down')).toEqual({
      name: 'down',
      provider: 'openai-chat',
      model: 'down-model',
      fallbacks: ['backup'],
    });
    expect(info.agents.profiles.find((profile) => profile.name === 'doomed')?.fallbacks).toEqual(['limited']);
    expect(JSON.stringify(info)).not.toContain('backup-key');

    const names = Object.keys(PRIMARIES) as (keyof typeof PRIMARIES)[];
    for (const name of names) {
      const created = await system.api('POST', '/conversations', {
        id: `on-${name}`,
        message: taskMessage({ id: `on-${name}`, steps: 1, effects: system.effects }),
        run: true,
        spec: { llm: { profile: name } },
      });
      expect(created.status, created.text).toBe(201);
    }
    await system.waitForStatus(
      names.map((name) => ({ tenant: 'acme', conversation: `on-${name}` })),
      AT_REST,
      120_000,
    );
    const spec = (await system.api('GET', '/conversations/on-down/spec')).body as ConversationSpec;
    expect(spec.spec.llm).toMatchObject({
      profile: 'down',
      model: 'down-model',
      fallbacks: [{ profile: 'backup', provider: 'openai-chat', model: 'backup-brain', baseURL: backup.baseURL }],
    });
    expect(JSON.stringify(spec)).not.toContain('-key');

    for (const name of ['down', 'limited', 'overloaded', 'hanging'] as const) {
      const id = `on-${name}`;
      const ref = { tenant: 'acme', conversation: id };
      const events = await system.events(ref);
      expect(await system.status(ref), id).toBe('finished');
      // one command and the final answer, both made by the fallback after the primary's two attempts each
      const steps = events.filter(
        (event): event is Extract<Event, { type: 'llm_usage' }> =>
          event.type === 'llm_usage' && event.purpose === 'step',
      );
      expect(steps, id).toHaveLength(2);
      for (const usage of steps) {
        expect(usage, id).toMatchObject({
          v: 5,
          model: 'backup-brain',
          fallback: { index: 0, provider: 'openai-chat', model: 'backup-brain', profile: 'backup' },
        });
      }
      expect(attemptsOf(outages.requests(name), id), id).toBe(2 * RETRY.maxAttempts);
      expect(
        outages
          .requests(name)
          .filter((body) => body.includes(`\\"id\\":\\"${id}\\"`))
          .every((body) => body.includes(`"model":"${name}-model"`)),
        id,
      ).toBe(true);
      const received = bodiesOf(backup.requests, id);
      expect(received, id).toHaveLength(2);
      expect(bodiesOf(system.brain.requests, id), id).toEqual([]);

      // rebuilt from the log alone, byte for byte as the fallback received it: the log holds which model made each step
      const replayed = replayRequests(events);
      expect(
        replayed.map((request) => [request.seq, request.provider, request.model]),
        id,
      ).toEqual(steps.map((usage) => [usage.seq, 'openai-chat', 'backup-brain']));
      expect(
        replayed.map((request) => request.body),
        id,
      ).toEqual(received);
      await expectAudited(system.log, ref);
    }
    expect((await system.readEffects()).sort()).toEqual([
      'on-down 0 0',
      'on-hanging 0 0',
      'on-limited 0 0',
      'on-overloaded 0 0',
    ]);

    // a key refused is the operator's to fix, not an outage: the step fails as it always has, and no fallback is called
    const refusing = await system.events({ tenant: 'acme', conversation: 'on-refusing' });
    expect(await system.status({ tenant: 'acme', conversation: 'on-refusing' })).toBe('error');
    expect(
      refusing
        .filter((event) => event.type === 'conversation_error')
        .map((event) => event.type === 'conversation_error' && event.code),
    ).toEqual(['llm_auth']);
    expect(attemptsOf(outages.requests('refusing'), 'on-refusing')).toBe(1);
    expect(bodiesOf(backup.requests, 'on-refusing')).toEqual([]);

    // every provider of the chain out: the step fails as it does without fallbacks, with the last model's failure
    const doomed = await system.events({ tenant: 'acme', conversation: 'on-doomed' });
    expect(await system.status({ tenant: 'acme', conversation: 'on-doomed' })).toBe('error');
    expect(
      doomed
        .filter((event) => event.type === 'conversation_error')
        .map((event) => event.type === 'conversation_error' && event.code),
    ).toEqual(['llm_rate_limit']);
    expect(doomed.some((event) => event.type === 'llm_usage')).toBe(false);
    expect([
      attemptsOf(outages.requests('doomed'), 'on-doomed'),
      attemptsOf(outages.requests('limited'), 'on-doomed'),
    ]).toEqual([RETRY.maxAttempts, RETRY.maxAttempts]);
    expect(bodiesOf(backup.requests, 'on-doomed')).toEqual([]);
    await expectAudited(system.log, { tenant: 'acme', conversation: 'on-doomed' });

    // each fallback taken is counted, by profile and reason, and logged naming its conversation
    expect((await metricLines(system, 'flotilla_llm_fallbacks_total')).sort()).toEqual([
      'flotilla_llm_fallbacks_total{from="doomed",to="limited",reason="transient",service="step-worker"} 1',
      'flotilla_llm_fallbacks_total{from="down",to="backup",reason="transient",service="step-worker"} 2',
      'flotilla_llm_fallbacks_total{from="hanging",to="backup",reason="timeout",service="step-worker"} 2',
      'flotilla_llm_fallbacks_total{from="limited",to="backup",reason="rate_limit",service="step-worker"} 2',
      'flotilla_llm_fallbacks_total{from="overloaded",to="backup",reason="transient",service="step-worker"} 2',
    ]);
    const warned = system.logLines
      .filter((line) => line.includes('model call moved to a fallback'))
      .map((line) => JSON.parse(line) as { conversation: string; code: string });
    expect(warned.filter((line) => line.conversation === 'on-hanging').map((line) => line.code)).toEqual([
      'timeout',
      'timeout',
    ]);
    expect(system.logLines.join('\n')).not.toContain('backup-key');
  }, 240_000);
});
