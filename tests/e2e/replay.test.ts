import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { replayRequests } from '@flotilla/agent';
import { FlotillaClient } from '@flotilla/client';
import type { Event } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { startBrainServer, taskMessage, type BrainServer } from '../support/brain-server.js';
import { runToExit, type Exited } from '../support/run-to-exit.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

const FLOTILLA = fileURLToPath(new URL('../../services/cli/bin/flotilla', import.meta.url));
const RETRY = { maxAttempts: 4, initialDelayMs: 100, maxDelayMs: 1_000 };
const AT_REST = ['waiting_for_confirmation', 'finished', 'error', 'stuck', 'idle', 'paused'];

function flotilla(system: RunningTestSystem, args: readonly string[]): Promise<Exited> {
  const env: NodeJS.ProcessEnv = { ...process.env, FLOTILLA_URL: system.gatewayUrl, FLOTILLA_API_KEY: system.apiKey };
  delete env['NO_COLOR'];
  return runToExit(FLOTILLA, args, { env, cwd: tmpdir(), timeoutMs: 60_000 });
}

/**
 * The step requests a model server received for conversation `id`, as received, in order, each
 * once (a step redone after a redelivery asks the same): the requests that offer tools (the
 * condenser's summaries offer none) and carry the conversation's task.
 */
function stepBodies(server: BrainServer, id: string): string[] {
  return [
    ...new Set(server.requests.filter((body) => body.includes('"tools":[') && body.includes(`\\"id\\":\\"${id}\\"`))),
  ];
}

/** The first state change to a resting status after seq `after`; the log's tail in the error when none comes. */
async function nextRest(
  system: RunningTestSystem,
  ref: { tenant: string; conversation: string },
  after: number,
): Promise<Extract<Event, { type: 'state_change' }>> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const events = await system.events(ref);
    const found = events.find(
      (event): event is Extract<Event, { type: 'state_change' }> =>
        event.seq > after &&
        event.type === 'state_change' &&
        event.status !== undefined &&
        AT_REST.includes(event.status),
    );
    if (found) return found;
    if (Date.now() > deadline) {
      const tail = events
        .slice(-8)
        .map(
          (event) =>
            `#${event.seq} ${event.type}${event.type === 'state_change' ? ` ${event.status ?? ''} (${event.reason ?? ''})` : ''}${event.type === 'conversation_error' ? ` ${event.code}: ${event.detail}` : ''}`,
        );
      throw new Error(
        `${ref.conversation} came to no rest after seq ${after} within 60 s; its log ends:\n${tail.join('\n')}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('replay: the model requests of every step, rebuilt from the log alone', () => {
  it('rebuilds, byte for byte, what the model servers received, across tool calls, condensations and a model switch mid-run; `flotilla replay --check` says so', async () => {
    await using second = await startBrainServer({ record: true });
    await using system = await startTestSystem({
      gateway: true,
      condensers: 1,
      recordModelRequests: true,
      // the date in the prompt: logged with the system prompt, never read again
      agent: { condenser: { maxEvents: 16, keepFirst: 2 }, prompt: { includeDate: true } },
      catalog: {
        profiles: {
          second: {
            provider: 'openai-chat',
            model: 'second-brain',
            baseURL: second.baseURL,
            apiKey: 'second-key',
            timeoutMs: 60_000,
            retry: RETRY,
          },
        },
      },
    });
    const client = new FlotillaClient({ baseUrl: system.gatewayUrl, apiKey: system.apiKey });
    const id = 'replayed';
    const ref = { tenant: 'acme', conversation: id };
    // every action waits for an approval: the model is switched while no step is in flight
    const created = await client.createConversation({
      id,
      title: 'Replayed',
      message: taskMessage({ id, steps: 10, effects: system.effects }),
      run: true,
      spec: { confirmation: { mode: 'always' } },
    });
    expect(created.conversation.agent).toMatchObject({ model: 'brain', template: null });
    expect((await client.getSpec(id)).spec).toMatchObject({
      confirmation: { mode: 'always' },
      llm: { profile: 'default', model: 'brain' },
    });

    // the run's rests, after what the create appended (its own state change to idle among it)
    let after = created.conversation.last_seq;
    for (let approvals = 0; ; approvals += 1) {
      const rest = await nextRest(system, ref, after);
      if (rest.status !== 'waiting_for_confirmation') {
        expect(rest.status).toBe('finished');
        break;
      }
      if (approvals === 4) {
        const switched = await client.updateSpec(id, {
          spec: { llm: { profile: 'second', temperature: 0.3 } },
          reason: 'model switched by the user',
        });
        expect(switched).toMatchObject({
          reason: 'model switched by the user',
          spec: {
            llm: { profile: 'second', model: 'second-brain', temperature: 0.3 },
            confirmation: { mode: 'always' },
          },
        });
        expect(await client.getSpec(id)).toEqual(switched);
      }
      const approved = await client.approve(id);
      expect(approved.appended).toBe(true);
      after = approved.last_seq;
    }

    const events = await system.events(ref);
    const steps = events.filter((event) => event.type === 'llm_usage' && event.purpose === 'step');
    const switchSeq = events.filter((event) => event.type === 'agent_spec').at(-1)!.seq;
    expect(steps.length).toBeGreaterThanOrEqual(11); // ten tool calls and the final answer
    expect(events.filter((event) => event.type === 'condensation').length).toBeGreaterThanOrEqual(1);
    expect(steps.some((usage) => usage.seq < switchSeq) && steps.some((usage) => usage.seq > switchSeq)).toBe(true);
    const received = [...stepBodies(system.brain, id), ...stepBodies(second, id)];
    expect(received.length).toBe(steps.length);

    // rebuilt from the log alone
    const replayed = replayRequests(events);
    expect(replayed.map((request) => request.seq)).toEqual(steps.map((usage) => usage.seq));
    expect(replayed.map((request) => request.body)).toEqual(received);
    // what the replay had to get right is really in the requests
    const prompted = events.find((event) => event.type === 'system_prompt')!;
    expect(replayed[0]!.body).toContain(`Today's date is ${prompted.timestamp.slice(0, 10)} (UTC).`);
    expect(
      replayed
        .filter((request) => request.seq > switchSeq)
        .every((request) => request.model === 'second-brain' && request.body.includes('"temperature":0.3')),
    ).toBe(true);
    expect(replayed.some((request) => request.body.includes('Summary of the work so far.'))).toBe(true);

    // the same through the gateway's REST API, with the command anyone can run
    const home = await mkdtemp(join(tmpdir(), 'flotilla-replay-'));
    try {
      const printed = await flotilla(system, ['replay', id]);
      expect(printed.code, printed.stderr).toBe(0);
      const lines = printed.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { seq: number; provider: string; body: string });
      expect(lines.map((line) => line.body)).toEqual(received);
      expect(lines.every((line) => line.provider === 'openai-chat')).toBe(true);

      const recorded = join(home, 'recorded.jsonl');
      await writeFile(recorded, received.map((body) => `${JSON.stringify({ body })}\n`).join(''));
      const checked = await flotilla(system, ['replay', id, '--check', recorded]);
      expect(checked.code, checked.stdout + checked.stderr).toBe(0);
      expect(checked.stdout.trimEnd().split('\n')).toEqual(
        steps.map((usage) => `seq ${usage.seq}: same, byte for byte`),
      );
      expect(checked.stderr).toBe(`${steps.length} of ${steps.length} steps rebuilt byte for byte\n`);

      // one byte off is found and named
      const tampered = [...received];
      tampered[2] = tampered[2]!.replace('"stream":true', '"stream":false');
      await writeFile(recorded, tampered.map((body) => `${JSON.stringify({ body })}\n`).join(''));
      const mismatch = await flotilla(system, ['replay', id, '--check', recorded]);
      expect(mismatch.code).toBe(1);
      expect(mismatch.stdout).toMatch(new RegExp(`^seq ${steps[2]!.seq}: differs from byte \\d+`, 'm'));
    } finally {
      await rm(home, { recursive: true, force: true });
    }
    await expectAudited(system.log, ref);
  }, 240_000);
});
