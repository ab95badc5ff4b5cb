// 1,000 messages to one conversation within about a second, over REST and over one socket,
// beside a neighbour. (A very long conversation: hostile-load-long-conversation.test.ts.)
import type { Event } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { taskMessage } from '../support/brain-server.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';
import { exits, postMessage, sleep, waitForRest, type Answer, type Sent } from './hostile-load-support.js';

/** A socket on the conversation's events, past replay, that sends message frames and answers each by its id. */
async function messageSocket(
  system: RunningTestSystem,
  id: string,
): Promise<{ send(index: number, text: string): Promise<Answer>; close(): void }> {
  const socket = new WebSocket(`${system.gatewayUrl.replace(/^http/, 'ws')}/v1/conversations/${id}/events`);
  const waiting = new Map<string, (answer: Answer) => void>();
  let live!: () => void;
  const isLive = new Promise<void>((resolve) => (live = resolve));
  socket.on('message', (data: Buffer) => {
    const frame = JSON.parse(data.toString('utf8')) as { type: string; id?: string; code?: string; last_seq?: number };
    if (frame.type === 'live') live();
    const answer = frame.id === undefined ? undefined : waiting.get(frame.id);
    if (!answer || (frame.type !== 'ack' && frame.type !== 'error')) return;
    waiting.delete(frame.id!);
    answer(
      frame.type === 'ack'
        ? { accepted: true, ...(frame.last_seq !== undefined ? { lastSeq: frame.last_seq } : {}) }
        : { accepted: false, refusal: `error frame ${frame.code}` },
    );
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  socket.send(JSON.stringify({ type: 'auth', api_key: system.apiKey }));
  await isLive;
  return {
    send: (index, text) =>
      new Promise<Answer>((resolve) => {
        waiting.set(`m${index}`, resolve);
        socket.send(JSON.stringify({ type: 'message', id: `m${index}`, text, run: true }));
      }),
    close: () => socket.close(),
  };
}

async function createConversation(system: RunningTestSystem, key: string, id: string, message: string): Promise<void> {
  const response = await fetch(`${system.gatewayUrl}/v1/conversations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id, message, run: true }),
  });
  if (response.status !== 201) throw new Error(`create ${id} answered ${response.status} ${await response.text()}`);
}

function userTexts(events: readonly Event[]): { seq: number; text: string }[] {
  return events.flatMap((event) =>
    event.type === 'message' && event.role === 'user'
      ? [{ seq: event.seq, text: event.content.map((part) => (part.type === 'text' ? part.text : '')).join('') }]
      : [],
  );
}

/**
 * 1,000 messages to one conversation (tenant acme) within about a second, sent by `send`, beside
 * a neighbour (tenant globex) whose run is timed alone first; everything a flood must leave true
 * is checked.
 */
async function floodBesideNeighbour(
  system: RunningTestSystem,
  flood: ConversationRef,
  send: (index: number, text: string) => Promise<Answer>,
  channel: string,
  expected: {
    /** The messages come in order (one socket): those accepted are logged in the order sent. */
    readonly inOrder: boolean;
    /** At most this many steps per accepted message: a step reads every message before it, so messages that come while one runs share the next. */
    readonly stepsPerMessage: number;
  },
): Promise<void> {
  const neighbourTask = (id: string) => taskMessage({ id, steps: 6, latencyMs: 150, effects: system.effects });
  const alone = { tenant: 'globex', conversation: `${flood.conversation}-calm-alone` };
  await createConversation(system, system.otherApiKey, alone.conversation, neighbourTask(alone.conversation));
  const aloneMs = await waitForRest(system, alone, 60_000, 0);
  expect(await system.status(alone)).toBe('finished');

  const neighbour = { tenant: 'globex', conversation: `${flood.conversation}-calm` };
  const neighbourDone = createConversation(
    system,
    system.otherApiKey,
    neighbour.conversation,
    neighbourTask(neighbour.conversation),
  ).then(() => waitForRest(system, neighbour, 90_000, 0));
  const sent: Sent[] = [];
  const answers: Promise<void>[] = [];
  const floodStarted = performance.now();
  for (let index = 0; index < 1_000; index += 1) {
    // one a millisecond, as far as this process's timers allow
    const due = floodStarted + index;
    while (performance.now() < due) await sleep(due - performance.now() > 2 ? 1 : 0);
    const entry: Sent = { index, sentAt: performance.now(), answeredAt: 0, accepted: false };
    sent.push(entry);
    answers.push(
      send(index, `flood ${index}`).then(
        (answer) => void Object.assign(entry, answer, { answeredAt: performance.now() }),
        (error: unknown) =>
          void Object.assign(entry, { refusal: `failed: ${String(error)}`, answeredAt: performance.now() }),
      ),
    );
  }
  const sendMs = performance.now() - floodStarted;
  // nothing hangs: every message is answered, accepted or refused, within a bound
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(answers),
    new Promise(
      (_, reject) =>
        (timer = setTimeout(
          () =>
            reject(
              new Error(
                `${sent.filter((entry) => entry.answeredAt === 0).length} of 1,000 messages unanswered after 30 s`,
              ),
            ),
          30_000,
        )),
    ),
  ]).finally(() => clearTimeout(timer));
  const answeredMs = performance.now() - floodStarted;
  const restMs = await waitForRest(system, flood, 30_000);
  const neighbourMs = await neighbourDone;

  const accepted = sent.filter((entry) => entry.accepted);
  const refused = sent.filter((entry) => !entry.accepted);
  const events = await system.events(flood);
  const logged = userTexts(events).flatMap(({ seq, text }) =>
    /^flood \d+$/.test(text) ? [{ seq, index: Number(text.slice(6)) }] : [],
  );
  const steps = events.filter((event) => event.type === 'llm_usage' && event.purpose === 'step').length;
  const reasons = new Map<string, number>();
  for (const entry of refused) {
    const reason = `${entry.refusal}${entry.retryAfter !== undefined ? ` (Retry-After ${entry.retryAfter})` : ''}`;
    reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  }
  console.log(
    `flood (${channel}): 1,000 sent in ${sendMs.toFixed(0)} ms, all answered after ${answeredMs.toFixed(0)} ms: ${accepted.length} accepted, ${[...reasons].map(([reason, count]) => `${count} ${reason}`).join(', ')}; ` +
      `${logged.length} logged, ${steps} steps; at rest ${restMs.toFixed(0)} ms after the last answer; the neighbour's 6 steps took ${neighbourMs.toFixed(0)} ms beside it, ${aloneMs.toFixed(0)} ms alone`,
  );

  expect(exits(system)).toEqual([]);
  expect(accepted.length).toBeGreaterThan(0);
  // each accepted message once, no refused one, at the seq its answer reported (the message, or a state change after it)
  expect(logged.map((entry) => entry.index).sort((a, b) => a - b)).toEqual(accepted.map((entry) => entry.index));
  const seqOf = new Map(logged.map((entry) => [entry.index, entry.seq]));
  for (const entry of accepted)
    expect(entry.lastSeq! - seqOf.get(entry.index)!, `flood ${entry.index}`).toBeOneOf([0, 1]);
  // in order: a message accepted before another was sent is logged before it
  const byAnswer = [...accepted].sort((a, b) => a.answeredAt - b.answeredAt);
  let answeredBefore = 0;
  let highestSeq = 0;
  for (const entry of accepted) {
    while (answeredBefore < byAnswer.length && byAnswer[answeredBefore]!.answeredAt < entry.sentAt)
      highestSeq = Math.max(highestSeq, seqOf.get(byAnswer[answeredBefore++]!.index)!);
    expect(seqOf.get(entry.index)!, `flood ${entry.index} after one accepted before it was sent`).toBeGreaterThan(
      highestSeq,
    );
  }
  if (expected.inOrder) expect(logged.map((entry) => entry.index)).toEqual(accepted.map((entry) => entry.index));
  // coalesced: far fewer steps than messages
  expect(steps).toBeLessThanOrEqual(Math.max(10, Math.ceil(accepted.length * expected.stepsPerMessage)));
  expect(await system.status(flood)).toBe('finished');
  // the neighbour finished its steps at about its own pace
  expect(await system.status(neighbour)).toBe('finished');
  expect((await system.events(neighbour)).filter((event) => event.type === 'action')).toHaveLength(6);
  expect(neighbourMs).toBeLessThan(2 * aloneMs + 2_000);
  for (const ref of [flood, neighbour, alone]) {
    await expectAudited(system.log, ref);
  }
}

describe('hostile load through the services', () => {
  it('1,000 POST …/messages in one second to one conversation: each accepted one logged once and in order, the rest refused with 429 and Retry-After, steps coalesced, at rest, the neighbour at its pace', async () => {
    await using system = await startTestSystem({
      gateways: 1,
      condensers: 1,
      gatewayEnv: { FLOTILLA_GATEWAY_WEB_UI: 'false' },
    });
    const flood = { tenant: 'acme', conversation: 'flood' };
    await createConversation(
      system,
      system.apiKey,
      flood.conversation,
      taskMessage({ id: 'flood', steps: 2, effects: system.effects }),
    );
    const refusals: Sent[] = [];
    await floodBesideNeighbour(
      system,
      flood,
      async (index, text) => {
        const answer = await postMessage(system, system.apiKey, flood.conversation, text, true);
        if (!answer.accepted) refusals.push({ index, sentAt: 0, answeredAt: 0, ...answer });
        return answer;
      },
      'REST',
      // a burst: hundreds accepted within a second, a handful of steps
      { inOrder: false, stepsPerMessage: 0.2 },
    );
    // every refusal says when to come back
    for (const refusal of refusals) {
      expect(['429 rate_limited', '503 unavailable'], JSON.stringify(refusal)).toContain(refusal.refusal);
      expect(refusal.retryAfter, JSON.stringify(refusal)).toBeGreaterThanOrEqual(1);
    }
  }, 120_000);

  it('1,000 message frames in one second on one socket: each acked one logged once and in the order sent, the rest answered with rate_limited error frames, at rest, the neighbour at its pace', async () => {
    await using system = await startTestSystem({
      gateways: 1,
      condensers: 1,
      gatewayEnv: { FLOTILLA_GATEWAY_WEB_UI: 'false' },
    });
    const flood = { tenant: 'acme', conversation: 'socket-flood' };
    await createConversation(
      system,
      system.apiKey,
      flood.conversation,
      taskMessage({ id: 'socket-flood', steps: 2, effects: system.effects }),
    );
    const socket = await messageSocket(system, flood.conversation);
    const refusals: string[] = [];
    try {
      await floodBesideNeighbour(
        system,
        flood,
        async (index, text) => {
          const answer = await socket.send(index, text);
          if (!answer.accepted) refusals.push(answer.refusal!);
          return answer;
        },
        'WebSocket',
        // 20 frames a second get through: a step (~50 ms here) often ends before the next message
        { inOrder: true, stepsPerMessage: 0.5 },
      );
    } finally {
      socket.close();
    }
    expect(new Set(refusals)).toEqual(new Set(['error frame rate_limited']));
  }, 120_000);
});
