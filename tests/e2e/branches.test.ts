import type { Conversation } from '@flotilla/api';
import type { Event } from '@flotilla/events';
import { buildView, toChatMessages } from '@flotilla/view';
import { describe, expect, it } from 'vitest';
import { expectAudited } from '../support/audited.js';
import { taskMessage } from '../support/brain-server.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

type ChatRequest = { messages: { role: string; content?: unknown }[] };

/** The step requests the model received (title requests aside), parsed. */
const stepRequests = (system: RunningTestSystem): ChatRequest[] =>
  system.brain.requests
    .filter((body) => body.includes('TASK') && !body.includes('You name conversations'))
    .map((body) => JSON.parse(body) as ChatRequest);

/** The one step request whose last message is the user's `text`. */
function requestEndingWith(system: RunningTestSystem, text: string): ChatRequest {
  const found = stepRequests(system).filter((request) => JSON.stringify(request.messages.at(-1)).includes(text));
  expect(found, `a step request ending with "${text}"`).toHaveLength(1);
  return found[0]!;
}

async function runToRest(system: RunningTestSystem, id: string, text: string): Promise<void> {
  const sent = await system.api('POST', `/conversations/${id}/messages`, { text, run: true });
  expect(sent.status, sent.text).toBe(202);
  await system.waitForStatus([{ tenant: 'acme', conversation: id }], ['finished'], 60_000);
}

describe('branches and side questions through the services: fork, rewind, ask', () => {
  it('a fork at a seq starts from the parent’s view there, goes on apart from the parent, and both pass the audit', async () => {
    await using system = await startTestSystem({ gateway: true, recordModelRequests: true });
    const parent = { tenant: 'acme', conversation: 'fork-parent' };
    const created = await system.api('POST', '/conversations', {
      id: parent.conversation,
      title: 'parent',
      message: taskMessage({ id: parent.conversation, steps: 2, effects: system.effects }),
      run: true,
    });
    expect(created.status, created.text).toBe(201);
    await system.waitForStatus([parent], ['finished'], 60_000);
    const before = await system.events(parent);
    const at = before.at(-1)!.seq;

    // refused: a point past the log, a body that is not one
    expect((await system.api('POST', `/conversations/${parent.conversation}/fork`, { at_seq: at + 5 })).status).toBe(
      400,
    );
    expect((await system.api('POST', `/conversations/${parent.conversation}/fork`, { at_seq: 'last' })).status).toBe(
      400,
    );
    expect((await system.api('POST', '/conversations/nobody/fork', {})).status).toBe(404);

    const forked = await system.api('POST', `/conversations/${parent.conversation}/fork`, {
      id: 'fork-child',
      at_seq: at,
    });
    expect(forked.status, forked.text).toBe(201);
    const child = { tenant: 'acme', conversation: 'fork-child' };
    expect((forked.body as Conversation).branch).toEqual({
      forked_from: { conversation: parent.conversation, seq: at },
      abandoned: [],
    });
    expect((forked.body as Conversation).title).toBe('parent (fork)');
    // the parent is untouched
    expect(await system.events(parent)).toEqual(before);

    // the child's view is the parent's at that point, and what it copied is that view only
    const childEvents = await system.events(child);
    expect(toChatMessages(buildView(childEvents))).toEqual(
      toChatMessages(buildView(before.filter((event) => event.seq <= at))),
    );
    const branch = childEvents.find((event): event is Extract<Event, { type: 'branch' }> => event.type === 'branch')!;
    expect(branch).toMatchObject({
      kind: 'fork',
      from: { conversation: parent.conversation, seq: at },
      copied: buildView(before).items.length,
    });
    expect(childEvents.some((event) => event.type === 'llm_usage' || event.type === 'execution_started')).toBe(false);

    // both go on; each one's next model request is that view plus its own message, byte for byte the same before it
    await runToRest(system, parent.conversation, 'the parent goes on');
    await runToRest(system, child.conversation, 'the child goes on');
    const parentNext = requestEndingWith(system, 'the parent goes on');
    const childNext = requestEndingWith(system, 'the child goes on');
    expect(childNext.messages.slice(0, -1)).toEqual(parentNext.messages.slice(0, -1));
    expect(JSON.stringify(parentNext)).not.toContain('the child goes on');
    expect((await system.events(parent)).some((event) => JSON.stringify(event).includes('the child goes on'))).toBe(
      false,
    );

    // a fork given its own id again returns it unchanged
    expect((await system.api('POST', `/conversations/${parent.conversation}/fork`, { id: 'fork-child' })).status).toBe(
      200,
    );
    await expectAudited(system.log, parent);
    await expectAudited(system.log, child);
  }, 180_000);

  it('a rewind leaves the later events in the log and out of the model’s next request; clients see the abandoned range', async () => {
    await using system = await startTestSystem({ gateway: true, recordModelRequests: true });
    const ref = { tenant: 'acme', conversation: 'rewound' };
    const created = await system.api('POST', '/conversations', {
      id: ref.conversation,
      message: taskMessage({ id: ref.conversation, steps: 1, effects: system.effects }),
      run: true,
    });
    expect(created.status, created.text).toBe(201);
    await system.waitForStatus([ref], ['finished'], 60_000);
    const to = (await system.events(ref)).at(-1)!.seq;
    await runToRest(system, ref.conversation, 'the abandoned way');
    const abandonedLast = (await system.events(ref)).at(-1)!.seq;

    // refused: past the log
    expect(
      (await system.api('POST', `/conversations/${ref.conversation}/rewind`, { to_seq: abandonedLast + 1 })).status,
    ).toBe(400);
    const rewound = await system.api('POST', `/conversations/${ref.conversation}/rewind`, {
      to_seq: to,
      reason: 'try the other way',
    });
    expect(rewound.status, rewound.text).toBe(202);
    const conversation = (await system.api('GET', `/conversations/${ref.conversation}`)).body as Conversation;
    expect(conversation.branch).toEqual({ forked_from: null, abandoned: [{ first: to + 1, last: abandonedLast }] });
    expect(conversation.status).toBe('idle');
    // a point a rewind left is no point to go back to
    const refused = await system.api('POST', `/conversations/${ref.conversation}/rewind`, { to_seq: to + 1 });
    expect(refused).toMatchObject({ status: 409, body: { error: { code: 'not_a_branch_point' } } });

    await runToRest(system, ref.conversation, 'the other way');
    const next = requestEndingWith(system, 'the other way');
    expect(JSON.stringify(next)).not.toContain('the abandoned way');
    const before = requestEndingWith(system, 'the abandoned way');
    expect(next.messages.slice(0, -1)).toEqual(before.messages.slice(0, -1));

    // the abandoned branch is still readable from the log
    const events = await system.events(ref);
    expect(
      events
        .filter((event) => event.seq > to && event.seq <= abandonedLast)
        .some((event) => JSON.stringify(event).includes('the abandoned way')),
    ).toBe(true);
    await expectAudited(system.log, ref);
  }, 180_000);

  it('ask: the answer comes from the conversation’s model, whole or streamed, and the log is byte for byte unchanged', async () => {
    await using system = await startTestSystem({ gateway: true, recordModelRequests: true });
    const ref = { tenant: 'acme', conversation: 'asked' };
    const created = await system.api('POST', '/conversations', {
      id: ref.conversation,
      message: taskMessage({ id: ref.conversation, steps: 1, effects: system.effects }),
      run: true,
    });
    expect(created.status, created.text).toBe(201);
    await system.waitForStatus([ref], ['finished'], 60_000);
    const rawLog = async (): Promise<string[]> => {
      const bodies: string[] = [];
      for await (const commit of system.log.read(ref))
        bodies.push(`${commit.streamSeq} ${JSON.stringify(commit.events)}`);
      return bodies;
    };
    const before = await rawLog();

    const asked = await system.api('POST', `/conversations/${ref.conversation}/ask`, {
      question: 'what did you do so far?',
    });
    expect(asked.status, asked.text).toBe(200);
    expect(asked.body).toMatchObject({
      answer: `Done: 1 steps for ${ref.conversation}.`,
      model: expect.any(String),
      usage: { prompt_tokens: expect.any(Number), cost_usd: expect.any(Number) },
    });
    const request = requestEndingWith(system, 'what did you do so far?');
    expect(request.messages[0]!.role).toBe('system');

    // streamed: deltas as the model writes, then the answer
    const response = await fetch(`${system.gatewayUrl}/v1/conversations/${ref.conversation}/ask`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-api-key': system.apiKey },
      body: JSON.stringify({ question: 'and now, streamed?' }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await response.text())
      .trim()
      .split('\n\n')
      .map((block) => {
        const [name, data] = block.split('\n');
        return {
          name: name!.replace('event: ', ''),
          data: JSON.parse(data!.replace('data: ', '')) as Record<string, unknown>,
        };
      });
    expect(events.at(-1)).toMatchObject({ name: 'answer', data: { answer: `Done: 1 steps for ${ref.conversation}.` } });
    const deltas = events.filter((event) => event.name === 'delta');
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.map((event) => event.data['text']).join('')).toBe(`Done: 1 steps for ${ref.conversation}.`);

    // refused: no question, another tenant's conversation
    expect((await system.api('POST', `/conversations/${ref.conversation}/ask`, {})).status).toBe(400);
    expect(
      (await system.api('POST', `/conversations/${ref.conversation}/ask`, { question: 'yours?' }, system.otherApiKey))
        .status,
    ).toBe(404);

    expect(await rawLog()).toEqual(before);
    expect(await system.status(ref)).toBe('finished');
  }, 180_000);
});
