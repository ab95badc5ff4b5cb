import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { draftEvent, type Event } from '@flotilla/events';
import { EventLog, type ConversationRef } from '@flotilla/log';
import { losingFirstAnswer, type LostWhen } from '@flotilla/log/testing';
import {
  ConversationCache,
  InterruptRegistry,
  RunnerHeader,
  RunnerRegistry,
  RunnerSubjects,
  ServiceMetrics,
} from '@flotilla/runtime';
import { createNoneProvider, DEFAULT_SANDBOX_SETTINGS, SandboxPool } from '@flotilla/sandbox';
import { startNats, uniqueName } from '@flotilla/testing';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { connect, headers } from '@nats-io/transport-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { storedDelivery } from './test-support/stored-delivery.js';
import { ToolRunner } from './tool-runner.js';

/** Which of a batch's appends loses its answer (the first holding an event of this type), and when. */
type LostAnswer = { readonly of: 'execution_started' | 'observation'; readonly when: LostWhen };

/**
 * Tool runners on a real nats-server (`runner-1`, `runner-2`… sharing the log and the registry),
 * whose log loses the answer to one append (`losingFirstAnswer`) when `lost` says which; one
 * conversation, `ref`. `partitionOwner`: the runner each of them reads as owning a partition.
 */
async function fixture(lost?: LostAnswer, options: { runners?: number; partitionOwner?: string } = {}) {
  const server = await startNats();
  const nc = await connect({ servers: server.url });
  const name = uniqueName('TR');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  const losing = lost ? losingFirstAnswer(log, lost.of, lost.when) : undefined;
  const faulty = losing?.log ?? log;
  const home = await mkdtemp(join(tmpdir(), 'flotilla-tool-runner-'));
  const runners = await RunnerRegistry.open(nc, {
    runnersBucket: uniqueName('runners'),
    workspacesBucket: uniqueName('workspaces'),
    livenessMs: 3_000,
  });
  const sandboxes = new SandboxPool(createNoneProvider(DEFAULT_SANDBOX_SETTINGS), { idleStopMs: 60_000 });
  const tools = new ToolRegistry(createBuiltinTools());
  const started = Array.from(
    { length: options.runners ?? 1 },
    (_, index) =>
      new ToolRunner({
        runnerId: `runner-${index + 1}`,
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
        ...(options.partitionOwner === undefined ? {} : { partitionOwner: () => options.partitionOwner }),
      }),
  );
  for (const runner of started) await runner.start();
  const ref: ConversationRef = { tenant: 'acme', conversation: uniqueName('c') };
  const handles = started.map((runner) => runner.handler());
  return {
    ref,
    nc,
    log,
    runners,
    answersLost: () => losing?.lost() ?? 0,
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
    /** The commit at `streamSeq` delivered to the runner at `index`, as stored (its partition in its subject). */
    deliver: async (streamSeq: number, index = 0) => handles[index]!(await storedDelivery(log, ref, streamSeq)),
    events: async (): Promise<Event[]> => (await log.readEvents(ref)).events,
    async [Symbol.asyncDispose]() {
      for (const runner of started) await runner.stop();
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
    await using f = await fixture();
    const seq = await f.act('echo ran >> effects.log');
    expect(await f.deliver(seq)).toEqual({ ack: true, outcome: 'executed' });
    const mode = async (directory: string): Promise<string> => ((await stat(directory)).mode & 0o777).toString(8);
    expect(await mode(f.workspace)).toBe('700');
    expect(await mode(dirname(f.workspace))).toBe('711');
    expect(await mode(dirname(dirname(f.workspace)))).toBe('711');
  });
});

describe('tool runner: a workspace no live runner owns', () => {
  it("is claimed by the owner of the conversation's partition: a runner delivered its commit elsewhere forwards it there to claim", async () => {
    await using f = await fixture(undefined, { runners: 2, partitionOwner: 'runner-2' });
    const seq = await f.act('echo ran >> effects.log');
    expect(await f.deliver(seq, 0)).toEqual({ ack: true, outcome: 'forwarded' });
    expect((await f.runners.owner(f.ref))?.runner).toBe('runner-2');
    const events = await f.events();
    expect(events.filter((event) => event.type === 'execution_started')).toHaveLength(1);
    expect(events.filter((event) => event.type === 'observation').map((event) => event.is_error)).toEqual([false]);
    expect(await readFile(join(f.workspace, 'effects.log'), 'utf8')).toBe('ran\n');
  });

  it('stays with a live runner that claimed it first: a claim forwarded meanwhile is refused, saying whose it is (a malformed one, saying why)', async () => {
    await using f = await fixture(undefined, { runners: 2, partitionOwner: 'runner-2' });
    const seq = await f.act('echo ran >> effects.log');
    // runner-1 read no owner and forwarded to runner-2 to claim; before it arrives, runner-1 itself took it
    expect(await f.runners.claim(f.ref, 'runner-1', undefined)).toBe(true);
    const claim = headers();
    claim.set(RunnerHeader.Tenant, f.ref.tenant);
    claim.set(RunnerHeader.Conversation, f.ref.conversation);
    claim.set(RunnerHeader.StreamSeq, String(seq));
    claim.set(RunnerHeader.Claim, '1');
    const stored = await storedDelivery(f.log, f.ref, seq);
    const wake = async () =>
      (
        await f.nc.request(RunnerSubjects.wake('runner-2'), stored.message.data, { headers: claim, timeout: 10_000 })
      ).json();
    expect(await wake()).toEqual({ ok: false, error: 'the workspace is owned by the live runner runner-1' });
    claim.set(RunnerHeader.Claim, 'yes');
    expect(await wake()).toEqual({ ok: false, error: 'bad request: Flotilla-Claim must be 1 when present' });
    expect((await f.runners.owner(f.ref))?.runner).toBe('runner-1');
    expect((await f.events()).filter((event) => event.type === 'execution_started')).toHaveLength(0);
    // the next delivery, to the partition's owner, goes to the workspace's
    expect(await f.deliver(seq, 1)).toEqual({ ack: true, outcome: 'forwarded' });
    expect(await readFile(join(f.workspace, 'effects.log'), 'utf8')).toBe('ran\n');
  });
  it("stays with the runner that owns it, which runs it itself though another owns the conversation's partition", async () => {
    await using f = await fixture(undefined, { runners: 2, partitionOwner: 'runner-2' });
    const seq = await f.act('echo ran >> effects.log');
    expect(await f.runners.claim(f.ref, 'runner-1', undefined)).toBe(true);
    expect(await f.deliver(seq, 0)).toEqual({ ack: true, outcome: 'executed' });
    expect((await f.runners.owner(f.ref))?.runner).toBe('runner-1');
    expect(await readFile(join(f.workspace, 'effects.log'), 'utf8')).toBe('ran\n');
  });
});
