import {
  approveCommand,
  CommandRefused,
  finishDrafts,
  interruptCommand,
  interruptedDrafts,
  messageCommand,
  nextWork,
  parseAgentConfig,
  pauseCommand,
  registryCatalog,
  rejectCommand,
  runCommand,
  step,
  type CommandState,
  type NextWork,
} from '@flotilla/agent';
import { CONSUMER_GROUPS, groupKinds, WRITER_KINDS, type CommitKind } from '@flotilla/bus';
import { draftEvent, type Event, type EventDraft } from '@flotilla/events';
import { ScriptedLanguageModel } from '@flotilla/llm';
import { conversationState } from '@flotilla/state';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

// Restate invariant 3 of DESIGN.md (no lost wake-ups) for filtered delivery, as a model: the
// services' decisions are the real ones (nextWork, step, the commands), their delivery is what the
// bus and the runtime do — each group is delivered the kinds of commit libs/bus says it is
// (groupKinds), an instance dismisses a first delivery that is not the tail, decides a
// redelivery at the tail, appends expecting the tail it decided at (a conflict is acked), and
// carries on after its own commits before acking the one that woke it; an instance may die at any
// point, and the commit it held is delivered again. Whatever the interleaving, a log at rest owes
// nobody anything.

const ref = { tenant: 'acme', conversation: 'model' };
type Group = (typeof CONSUMER_GROUPS)[number];
type Writer = keyof typeof WRITER_KINDS;

/** The group that owes each kind of work (NextWork, libs/agent). */
const OWED_BY: Readonly<Record<NextWork['kind'], Group | undefined>> = {
  rest: undefined,
  in_progress: undefined,
  step: 'step-worker',
  finish: 'step-worker',
  execute: 'tool-runner',
  prepare: 'tool-runner',
  condense: 'condenser',
  delegate: 'delegator',
  delegated: undefined,
};

type Delivery = { readonly commit: number; readonly deliveryCount: number };
type Choice = { readonly pick: number; readonly crash: number; readonly user: number };

const choice = fc.record({ pick: fc.nat(1_000), crash: fc.nat(99), user: fc.nat(99) });

/** One run of the model: `choices` drive every scheduling decision; returns the log at rest. */
async function run(choices: readonly Choice[], confirm: boolean): Promise<{ events: Event[]; owed: NextWork }> {
  const events: Event[] = [];
  const commits: { readonly kind: CommitKind; readonly lastSeq: number }[] = [];
  const queues = new Map<Group, Delivery[]>(CONSUMER_GROUPS.map((group) => [group, []]));
  const deadRunners = new Set<string>();
  let runnerCount = 0;
  let userBudget = 6;
  // instances die at most this often in one run (each death delivers a commit again)
  let crashBudget = 6;
  let turn = 0;
  const next = (): Choice => choices[turn++ % choices.length]!;

  const agent = parseAgentConfig({
    llm: { provider: 'openai-chat', model: 'm' },
    tools: ['terminal', 'think', 'finish'],
    confirmation: { mode: confirm ? 'always' : 'never' },
  });
  const tools = registryCatalog(new ToolRegistry(createBuiltinTools()), agent.tools);
  let calls = 0;
  const invalidEvery = 2 + (choices[0]!.pick % 3);
  const llm = new ScriptedLanguageModel({
    replies: () => {
      calls += 1;
      // a few tool calls, then the agent finishes; now and then a call that cannot run (answered in
      // the step's own commit by an agent_error: the step worker owes the next step after its own commit)
      if (calls % 4 === 0) return { toolCalls: [{ id: `f${calls}`, name: 'finish', arguments: '{"message":"done"}' }] };
      return {
        toolCalls: [
          {
            id: `c${calls}`,
            name: 'terminal',
            arguments: calls % invalidEvery === 0 ? '{"command":' : '{"command":"ls"}',
          },
        ],
      };
    },
  });
  const owed = (): NextWork => nextWork(events, { runnerAlive: (runner) => !deadRunners.has(runner) });

  const append = (writer: Writer | 'user', drafts: readonly EventDraft[], expected: number): boolean => {
    if (events.length !== expected) return false;
    if (drafts.length === 0) return true;
    for (const draft of drafts) events.push({ ...draft, seq: events.length + 1 } as Event);
    const kind: CommitKind = writer === 'user' ? 'user' : WRITER_KINDS[writer];
    commits.push({ kind, lastSeq: events.length });
    for (const group of CONSUMER_GROUPS)
      if (groupKinds(group).includes(kind)) queues.get(group)!.push({ commit: commits.length - 1, deliveryCount: 1 });
    return true;
  };

  /** What the group appends for the work it owes, decided from the log as it is now (one commit; the tool runner's execution is two). */
  const decide = async (group: Group, runner: string): Promise<EventDraft[][]> => {
    const work = owed();
    if (OWED_BY[work.kind] !== group) return [];
    switch (work.kind) {
      case 'step':
        return [(await step({ agent, llm, tools, events: [...events], conversation: ref })).drafts as EventDraft[]];
      case 'finish':
        return [finishDrafts(ref)];
      case 'execute': {
        const started = [...interruptedDrafts(work.interrupted, { ...ref, source: 'environment' })];
        if (work.actions.length > 0)
          started.push(
            draftEvent({ ...ref, source: 'system' }, 'execution_started', {
              action_ids: work.actions.map((action) => action.id),
              runner,
            }),
          );
        const observed = work.actions.map((action) =>
          draftEvent({ ...ref, source: 'environment' }, 'observation', {
            action_id: action.id,
            tool_call_id: action.tool_call_id,
            tool_name: action.tool_name,
            content: [{ type: 'text', text: 'ok' }],
            is_error: false,
          }),
        );
        return observed.length > 0 ? [started, observed] : [started];
      }
      case 'condense':
        return [[draftEvent({ ...ref, source: 'agent' }, 'condensation', { forgotten_event_ids: [] })]];
      default:
        throw new Error(`the model has no ${work.kind} work`);
    }
  };

  /** One delivery handled by a fresh instance of the group: it may die at any point (then the commit comes again). */
  const handle = async (group: Group, delivery: Delivery, chance: number): Promise<void> => {
    let crash = chance;
    const redeliver = (): void =>
      void queues.get(group)!.push({ commit: delivery.commit, deliveryCount: delivery.deliveryCount + 1 });
    const runner = `runner-${(runnerCount += 1)}`;
    const die = (): void => {
      deadRunners.add(runner);
      redeliver();
    };
    if (crashBudget <= 0) crash = 100;
    else if (crash < 20) crashBudget -= 1;
    // a first delivery that is not the tail is dismissed: a later commit wakes the group, or its own writer carries on
    if (delivery.deliveryCount === 1 && commits[delivery.commit]!.lastSeq !== events.length) return;
    if (crash < 5) return die();
    const writer = group as Writer;
    let expected = events.length;
    const first = await decide(group, runner);
    // between the decision and the append, anything else may land: a user's command
    if (first.length > 0 && next().user < 30) userCommand(next());
    if (crash < 10) return die();
    let plan = first;
    for (let round = 0; plan.length > 0 && round < 20; round += 1) {
      for (const [index, drafts] of plan.entries()) {
        if (!append(writer, drafts, expected)) return; // conflict: acked, the other writer's commit wakes whoever it concerns
        expected = events.length;
        if (index === 0 && crash < 15) return die(); // after the first commit of its work, before the rest and before the ack
      }
      // carries on after its own commit, as if delivered to it
      if (round === 0 && crash < 20) return die();
      plan =
        WRITER_KINDS[writer] !== undefined && !groupKinds(group).includes(WRITER_KINDS[writer])
          ? await decide(group, runner)
          : [];
    }
  };

  const userCommand = (c: Choice): void => {
    if (userBudget <= 0) return;
    userBudget -= 1;
    const state: CommandState = conversationState(events);
    const commands = [
      () => messageCommand(state, ref, 'go on', { run: true }),
      () => pauseCommand(state, ref),
      () => interruptCommand(state, ref),
      () => approveCommand(state, ref),
      () => rejectCommand(state, ref, 'no'),
      () => runCommand(state, ref),
      () => [draftEvent({ ...ref, source: 'user' }, 'condensation_request', { reason: 'asked' })],
    ];
    try {
      append('user', commands[c.user % commands.length]!(), events.length);
    } catch (error) {
      if (!(error instanceof CommandRefused)) throw error;
    }
  };

  append(
    'user',
    [
      draftEvent({ ...ref, source: 'system' }, 'state_change', { status: 'idle', reason: 'created' }),
      ...messageCommand({ status: 'idle' } as CommandState, ref, 'do it', { run: true }),
    ],
    0,
  );
  let quiet = false;
  for (let ticks = 0; ticks < 5_000 && !quiet; ticks += 1) {
    const c = next();
    const ready = CONSUMER_GROUPS.filter((group) => queues.get(group)!.length > 0);
    if (ready.length === 0) {
      if (userBudget > 0 && c.user < 50) {
        userCommand(c);
        continue;
      }
      quiet = true;
      break;
    }
    if (userBudget > 0 && c.user < 10) userCommand(next());
    const group = ready[c.pick % ready.length]!;
    const queue = queues.get(group)!;
    // deliveries come in order; a redelivery may come after later ones
    const delivery = queue.splice(c.pick % Math.min(queue.length, 2), 1)[0]!;
    await handle(group, delivery, c.crash);
  }
  if (!quiet) throw new Error(`no rest after 5,000 deliveries: ${events.length} events`);
  return { events, owed: owed() };
}

describe('no lost wake-ups with commits delivered by kind (DESIGN.md invariant 3)', () => {
  it('whatever the interleaving, commands and crashes, a log at rest owes no group any work', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(choice, { minLength: 1, maxLength: 200 }), fc.boolean(), async (choices, confirm) => {
        const { events, owed } = await run(choices, confirm);
        const types = events.map((e) => e.type + ('status' in e && e.status ? ':' + e.status : ''));
        const count = (t: string) => types.filter((x) => x === t).length;
        if (process.env.MODEL_STATS)
          console.log(
            JSON.stringify({
              n: events.length,
              actions: count('action'),
              obs: count('observation'),
              err: count('agent_error'),
              started: count('execution_started'),
              finished: count('state_change:finished'),
              waiting: count('state_change:waiting_for_confirmation'),
              last: types.slice(-3),
            }),
          );
        expect(
          owed.kind,
          JSON.stringify(events.map((event) => [event.seq, event.type, 'status' in event ? event.status : ''])).slice(
            -2_000,
          ),
        ).toMatch(/^(rest|delegated)$/);
      }),
      { numRuns: 300 },
    );
  });
});
