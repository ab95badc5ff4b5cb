// A very long conversation takes one more message through the gateway. (A flood of messages:
// hostile-load-flood.test.ts.)
import { parseConversationCheckpoint } from '@flotilla/agent';
import { draftEvent, withPositionalIds, type Event, type EventDraft } from '@flotilla/events';
import { EMPTY_TAIL, type Tail } from '@flotilla/log';
import { CheckpointStore } from '@flotilla/runtime';
import { waitReady } from '@flotilla/supervisor';
import { CheckpointWriter, type CommitNote } from '@flotilla/workers';
import { describe, expect, it } from 'vitest';
import { condensedConversationCommits } from '../bench/condensed-conversation.js';
import { taskMessage } from '../support/brain-server.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';
import { exits, postMessage, waitForRest } from './hostile-load-support.js';

/**
 * Events of the long conversation: FLOTILLA_HOSTILE_EVENTS, default 100,000, the size issue 17
 * asks for (74,785 commits: written in ~11 s, worked through in ~9 s by the acting services that
 * missed them while stopped, the test ~35 s on 2 cores, ~48 s under heavy load). At 30,000
 * (22,435 commits) the test takes ~18 s. Until the services' NATS users lost their response permissions (requestAnswer in libs/bus) this
 * took 30-80 s at 30,000 and did not finish within 5 minutes at 100,000: nats-server 2.9 walked
 * every recent delivery of such a user at each delivery (docs/benchmarks.md, backlog-drain).
 */
const LONG_EVENTS = Number(process.env['FLOTILLA_HOSTILE_EVENTS'] ?? 100_000);
/** The long conversation's test: ~2 s per 1,000 events at most (~0.35 s measured), mostly writing the history. */
const LONG_TIMEOUT_MS = Math.max(120_000, LONG_EVENTS * 2);

describe('hostile load through the services', () => {
  it(
    `a conversation of ${LONG_EVENTS.toLocaleString('en')} events takes one more message through the gateway: its first step starts soon (a load from its view checkpoint), it finishes, the gateway's reads answer promptly, nothing exits`,
    async () => {
      await using system = await startTestSystem({
        gateways: 1,
        condensers: 1,
        gatewayEnv: { FLOTILLA_GATEWAY_WEB_UI: 'false' },
      });
      const ref = { tenant: 'acme', conversation: 'long' };
      // The history is written straight to the log as the runtime writes it (condensed every ~120
      // view items), with the services that would act on it stopped meanwhile (a step, a tool or a
      // summary of a half-written history would race the writer); its view checkpoint as the
      // projector writes it at the last condensation. Written over hours, the projector would have
      // kept one up with each condensation; told of 50,000 commits at once it lags (see the report).
      const stopped = system.processes.filter((child) =>
        /^(step-worker|tool-runner|condenser|projector)-/.test(child.name),
      );
      await Promise.all(stopped.map((child) => child.stop()));
      const checkpoints = await CheckpointStore.open(system.nc, { parse: parseConversationCheckpoint });
      const built = performance.now();
      let tail: Tail = EMPTY_TAIL;
      let commits = 0;
      let lastCondensation: CommitNote | undefined;
      // each event gets its positional id where it lands; later drafts refer to it by that id
      const placed = new Map<string, string>();
      const append = async (drafts: readonly EventDraft[]): Promise<void> => {
        const commit = await system.log.append(
          ref,
          withPositionalIds(
            drafts.map((draft) => referringTo(draft, placed)),
            tail.lastSeq + 1,
          ),
          { expected: tail },
        );
        drafts.forEach((draft, index) => placed.set(draft.id, commit.events[index]!.id));
        tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
        commits += 1;
        if (drafts.some((draft) => draft.type === 'condensation'))
          lastCondensation = {
            streamSeq: commit.streamSeq,
            lastSeq: commit.lastSeq,
            eventTypes: [...new Set(drafts.map((draft) => draft.type))],
          };
      };
      for (const drafts of condensedConversationCommits(ref, LONG_EVENTS)) await append(drafts);
      await append([
        draftEvent({ ...ref, source: 'agent' }, 'message', {
          role: 'assistant',
          content: [{ type: 'text', text: 'All the test files pass now.' }],
        }),
        draftEvent({ ...ref, source: 'system' }, 'state_change', { status: 'finished', reason: 'the agent finished' }),
      ]);
      const buildMs = performance.now() - built;
      const checkpointed = performance.now();
      const outcome = await new CheckpointWriter(system.log, checkpoints).noteCommit(ref, lastCondensation!);
      expect(outcome).toBe('written');
      const checkpointMs = performance.now() - checkpointed;
      const checkpoint = await checkpoints.get(ref);
      expect(tail.lastSeq - (checkpoint?.lastSeq ?? 0)).toBeLessThan(300);
      // back, the services work through the commits they missed (each one not the tail: nothing to do)
      const restarted = performance.now();
      for (const child of stopped) child.start();
      await Promise.all(stopped.map((child) => waitReady(system.healthUrls.get(child.name)!, 60_000)));
      // the services that act on a message first; the projector (its snapshot and checkpoints
      // follow the log, a command reads the log past them) may go on in the background
      const caughtUp = new Map<string, number>();
      // (the condenser is not delivered the log's commits: step workers wake it when it owes something)
      const acting = ['step-worker', 'tool-runner'];
      let reported = performance.now();
      await expect
        .poll(
          async () => {
            const behind: string[] = [];
            for (const service of [...acting, 'projector']) {
              if (caughtUp.has(service)) continue;
              const pending = await pendingDeliveries(system, [service]);
              if (pending === 0) caughtUp.set(service, performance.now() - restarted);
              else behind.push(`${service} ${pending}`);
            }
            if (performance.now() - reported > 15_000) {
              reported = performance.now();
              console.log(
                `${((reported - restarted) / 1_000).toFixed(0)} s after the restart, commits still to work through: ${behind.join(', ')}`,
              );
            }
            return acting.filter((service) => !caughtUp.has(service));
          },
          { timeout: LONG_TIMEOUT_MS / 2, interval: 250 },
        )
        .toEqual([]);
      const restartMs = performance.now() - restarted;
      const coldLoads = async () =>
        parseColdLoads(await (await fetch(`${system.healthUrls.get('step-worker-1')}/metrics`)).text());
      const before = await coldLoads();

      const task = taskMessage({ id: 'long-task', steps: 3, effects: system.effects });
      const sentAt = Date.now();
      const answer = await postMessage(system, system.apiKey, 'long', task, true);
      const answerMs = Date.now() - sentAt;
      expect(answer.status, JSON.stringify(answer)).toBe(202);
      await expect
        .poll(() => system.brain.calls.some((call) => call.task === 'long-task'), { timeout: 30_000, interval: 50 })
        .toBe(true);
      // the step's part: from the message in the log to the model call (the gateway's answer, which
      // reads the log past a snapshot the projector has not caught up on yet, is timed apart)
      const logged = (await system.events(ref)).find((event) => event.seq > tail.lastSeq && event.type === 'message')!;
      const firstStepMs =
        system.brain.calls.find((call) => call.task === 'long-task')!.startedAt - Date.parse(logged.timestamp);
      const runMs = await waitForRest(system, ref, 60_000, 500);
      // written untitled while the condenser was stopped, it is owed a title: the message woke the
      // condenser for it, and it lands beside the run (awaited here, so the reads below see one log)
      await expect
        .poll(
          async () =>
            (await system.events(ref)).some((event) => event.type === 'state_change' && event.title !== undefined),
          { timeout: 30_000, interval: 250 },
        )
        .toBe(true);

      const timed = async (path: string): Promise<{ ms: number; status: number; body: unknown }> => {
        const started = performance.now();
        const response = await fetch(`${system.gatewayUrl}/v1/conversations/long${path}`, {
          headers: { authorization: `Bearer ${system.apiKey}` },
        });
        const body: unknown = await response.json();
        return { ms: performance.now() - started, status: response.status, body };
      };
      const events = await system.events(ref);
      const middle = events[Math.floor(events.length / 2)]!;
      const reads = {
        conversation: await timed(''),
        'events (first page)': await timed('/events?limit=100'),
        'events (last page)': await timed('/events?order=desc&limit=100'),
        'events (user messages)': await timed('/events?source=user&limit=100'),
        'event by seq': await timed(`/events/${middle.seq}`),
        'event by id': await timed(`/events/${middle.id}`),
        'events/count': await timed('/events/count'),
        'events/count?type=action': await timed('/events/count?type=action'),
      };
      const after = await coldLoads();
      console.log(
        `long conversation: ${LONG_EVENTS.toLocaleString('en')} events in ${commits.toLocaleString('en')} commits written in ${(buildMs / 1_000).toFixed(1)} s, its checkpoint (at seq ${checkpoint?.lastSeq}) in ${(checkpointMs / 1_000).toFixed(1)} s; the services back and through the commits they missed in ${(restartMs / 1_000).toFixed(1)} s (${[...caughtUp].map(([service, ms]) => `${service} ${(ms / 1_000).toFixed(1)} s`).join(', ')}${caughtUp.has('projector') ? '' : ', the projector still behind'}); ` +
          `the message answered in ${answerMs} ms, the first step ${firstStepMs} ms after it was logged, at rest ${(runMs / 1_000).toFixed(1)} s after it; cold loads ${JSON.stringify(before)} -> ${JSON.stringify(after)}\n  reads: ${Object.entries(
            reads,
          )
            .map(([name, read]) => `${name} ${read.ms.toFixed(0)} ms`)
            .join(', ')}`,
      );

      expect(exits(system)).toEqual([]);
      expect(await system.status(ref)).toBe('finished');
      const added = events.filter((event) => event.seq > tail.lastSeq);
      console.log(
        `after the message: ${added.length} events, ${added.filter((event) => event.type === 'condensation').length} condensations, ${added.filter((event) => event.type === 'action').length} actions`,
      );
      expect(added.filter((event) => event.type === 'action')).toHaveLength(3);
      expect(added.findLast((event) => event.type === 'message' && event.role === 'assistant')).toMatchObject({
        content: [{ type: 'text', text: 'Done: 3 steps for long-task.' }],
      });
      // loaded from its checkpoint, not by reading every event
      expect((after['checkpoint'] ?? 0) - (before['checkpoint'] ?? 0)).toBeGreaterThanOrEqual(1);
      expect((after['log'] ?? 0) - (before['log'] ?? 0)).toBe(0);
      expect(firstStepMs).toBeLessThan(5_000);
      expect(answerMs).toBeLessThan(30_000);
      for (const [name, read] of Object.entries(reads)) {
        expect(read.status, `${name}: ${JSON.stringify(read.body).slice(0, 300)}`).toBe(200);
        // a filter no header or count answers (a source) reads the log until its page is full: here
        // the whole log (2.5-3 s on a slow day of the 2-core machine); the other reads are located
        expect(read.ms, name).toBeLessThan(name === 'events (user messages)' ? 10_000 : 2_000);
      }
      expect(reads['events/count'].body).toEqual({ count: events.length });
      expect(reads['event by id'].body).toMatchObject({ id: middle.id, seq: middle.seq });
      expect(reads['event by seq'].body).toMatchObject({ id: middle.id, seq: middle.seq });
      expect((reads['events (last page)'].body as { items: Event[] }).items[0]?.seq).toBe(events.length);
      await expectAudited(system.log, ref);
    },
    LONG_TIMEOUT_MS,
  );
});

/** The draft with its references to earlier events (parent, action_id, action_ids, forgotten_event_ids) pointed at the ids they were stored with. */
function referringTo(draft: EventDraft, placed: ReadonlyMap<string, string>): EventDraft {
  const id = (old: string): string => placed.get(old) ?? old;
  const moved: Record<string, unknown> = { ...draft };
  if (draft.parent !== undefined) moved['parent'] = id(draft.parent);
  if ('action_id' in draft && typeof draft.action_id === 'string') moved['action_id'] = id(draft.action_id);
  if ('action_ids' in draft) moved['action_ids'] = draft.action_ids.map(id);
  if ('forgotten_event_ids' in draft) moved['forgotten_event_ids'] = draft.forgotten_event_ids.map(id);
  return moved as EventDraft;
}

/** Commits the durable consumers of `services` (all when left out) have yet to deliver or to see acknowledged. */
async function pendingDeliveries(system: RunningTestSystem, services?: readonly string[]): Promise<number> {
  let pending = 0;
  for await (const consumer of system.log.jsm.consumers.list(system.log.streamName)) {
    const name = consumer.config.durable_name;
    if (name && (!services || services.includes(name))) pending += consumer.num_pending + consumer.num_ack_pending;
  }
  return pending;
}

/** flotilla_cold_loads_total by source, from a step worker's /metrics. */
function parseColdLoads(metrics: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const match of metrics.matchAll(/^flotilla_cold_loads_total\{([^}]*)\} (\d+)/gm)) {
    const source = /source="([^"]+)"/.exec(match[1]!)?.[1];
    if (source) counts[source] = Number(match[2]);
  }
  return counts;
}
