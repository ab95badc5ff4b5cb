import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { draftEvent, type Event } from '@flotilla/events';
import { EventLog, type ConversationRef } from '@flotilla/log';
import { losingFirstAnswer, type LostWhen } from '@flotilla/log/testing';
import { ConversationCache, InterruptRegistry, RunnerRegistry, ServiceMetrics } from '@flotilla/runtime';
import { createNoneProvider, DEFAULT_SANDBOX_SETTINGS, SandboxPool } from '@flotilla/sandbox';
import { startNats, uniqueName } from '@flotilla/testing';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { storedDelivery } from './test-support/stored-delivery.js';
import { ToolRunner } from './tool-runner.js';

/** Which of a batch's appends loses its answer (the first holding an event of this type), and when. */
type LostAnswer = { readonly of: 'execution_started' | 'observation'; readonly when: LostWhen };

/** A tool runner on a real nats-server whose log loses the answer to one append (`losingFirstAnswer`). */
async function fixture(lost: LostAnswer) {
  const server = await startNats();
  const nc = await connect({ servers: server.url });
  const name = uniqueName('TR');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  const losing = losingFirstAnswer(log, lost.of, lost.when);
  const faulty = losing.log;
  const home = await mkdtemp(join(tmpdir(), 'flotilla-tool-runner-'));
  const runners = await RunnerRegistry.open(nc, {
    runnersBucket: uniqueName('runners'),
    workspacesBucket: uniqueName('workspaces'),
    livenessMs: 3_000,
  });
  const sandboxes = new SandboxPool(createNoneProvider(DEFAULT_SANDBOX_SETTINGS), { idleStopMs: 60_000 });
  const tools = new ToolRegistry(createBuiltinTools());
  const runner = new ToolRunner({
    runnerId: 'runner-1',
    log: faulty,
    cache: new ConversationCache(faulty, 10),
    tools,
    runners,
    interrupts: new InterruptRegistry(),
    nc,
    metrics: new ServiceMetrics('tool-runner'),
    logger: pino({ level: 'silent' }),
    workspaceRoot: join(home, 'workspaces'),
    privateRoot: join(home, 'private'),
    sandboxes,
  });
  await runner.start();
  const ref: ConversationRef = { tenant: 'acme', conversation: uniqueName('c') };
  const handle = runner.handler();
  return {
    ref,
    answersLost: losing.lost,
    workspace: join(home, 'workspaces', ref.tenant, ref.conversation),
    /** A running conversation whose step asked for `command` in the terminal; the commit of that action's stream sequence. */
    async act(command: string): Promise<number> {
      const system = { ...ref, source: 'system' as const };
      const started = await log.append(
        ref,
        [
          draftEvent(system, 'state_change', { status: 'idle', reason: 'created' }),
          draftEvent({ ...ref, source: 'user' }, 'message', {
            role: 'user',
            content: [{ type: 'text', text: 'Run it' }],
          }),
          draftEvent(system, 'state_change', { status: 'running' }),
        ],
        { expected: await log.tail(ref) },
      );
      const input = { command };
      const action = draftEvent({ ...ref, source: 'agent' }, 'action', {
        tool_name: 'terminal',
        tool_call_id: 'call_1',
        arguments: JSON.stringify(input),
        input,
        thought: [],
        response_id: 'r1',
        security_risk: 'low',
      });
      return (await log.append(ref, [action], { expected: { streamSeq: started.streamSeq, lastSeq: started.lastSeq } }))
        .streamSeq;
    },
    deliver: async (streamSeq: number) => handle(await storedDelivery(log, ref, streamSeq)),
    events: async (): Promise<Event[]> => (await log.readEvents(ref)).events,
    async [Symbol.asyncDispose]() {
      await runner.stop();
      await tools.close();
      await sandboxes.closeAll();
      await nc.close();
      await server[Symbol.asyncDispose]();
      await rm(home, { recursive: true, force: true });
    },
  };
}

const LOST_ANSWERS: LostAnswer[] = [
  { of: 'execution_started', when: 'after_stored' },
  { of: 'execution_started', when: 'before_stored' },
  { of: 'observation', when: 'after_stored' },
  { of: 'observation', when: 'before_stored' },
];

describe('tool runner: an append whose answer was lost', () => {
  it.each(LOST_ANSWERS)(
    'runs the action once and answers it once (the answer of $of lost $when), instead of calling it interrupted on a redelivery',
    async (lost) => {
      await using f = await fixture(lost);
      const seq = await f.act('echo ran >> effects.log');
      expect(await f.deliver(seq)).toEqual({ ack: true, outcome: 'executed' });
      expect(f.answersLost()).toBe(1);

      const events = await f.events();
      expect(events.filter((event) => event.type === 'execution_started')).toHaveLength(1);
      const observations = events.filter((event) => event.type === 'observation');
      expect(observations.map((event) => event.is_error)).toEqual([false]);
      expect(await readFile(join(f.workspace, 'effects.log'), 'utf8')).toBe('ran\n');
    },
  );
});

describe('tool runner: workspaces on the host', () => {
  it("are traversable but not listable by other users, each its owner's alone", async () => {
    await using f = await fixture(LOST_ANSWERS[0]!);
    const seq = await f.act('echo ran >> effects.log');
    expect(await f.deliver(seq)).toEqual({ ack: true, outcome: 'executed' });
    const mode = async (directory: string): Promise<string> => ((await stat(directory)).mode & 0o777).toString(8);
    expect(await mode(f.workspace)).toBe('700');
    expect(await mode(dirname(f.workspace))).toBe('711');
    expect(await mode(dirname(dirname(f.workspace)))).toBe('711');
  });
});
