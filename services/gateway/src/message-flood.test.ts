import type { Event } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { ACME_KEY, startGatewayHarness, type GatewayHarness } from './test-support/gateway-harness.js';
import { liveSocket } from './test-support/http-probe.js';

type Answer = { index: number; status: number; retryAfter: string | null; code?: string };

/** `count` POST …/messages to one conversation, all at once. */
async function flood(h: GatewayHarness, id: string, count: number): Promise<Answer[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const response = await fetch(`${h.url}/v1/conversations/${id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ACME_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: `flood ${index}` }),
      });
      const body = (await response.json()) as { error?: { code: string } };
      return {
        index,
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        ...(body.error ? { code: body.error.code } : {}),
      };
    }),
  );
}

const floodIndexes = (events: readonly Event[]): number[] =>
  events.flatMap((event) => {
    if (event.type !== 'message' || event.role !== 'user') return [];
    const match = /^flood (\d+)$/.exec(event.content.map((part) => (part.type === 'text' ? part.text : '')).join(''));
    return match ? [Number(match[1])] : [];
  });

describe('a flood of messages to one conversation', () => {
  it('commands on one conversation take turns: 300 at once are all accepted and logged once, none refused for conflicting with each other', async () => {
    // before, they raced for the tail: most re-read and re-decided up to 50 times, then got 503
    await using h = await startGatewayHarness({ rateLimitPerSecond: 0, maxQueuedMessages: 0 });
    await h.acme.createConversation({ id: 'burst' });
    const answers = await flood(h, 'burst', 300);
    expect(answers.filter((answer) => answer.status !== 202)).toEqual([]);
    const logged = floodIndexes((await h.log.readEvents({ tenant: 'acme', conversation: 'burst' })).events);
    expect([...logged].sort((a, b) => a - b)).toEqual(answers.map((answer) => answer.index));
  });

  it('past FLOTILLA_GATEWAY_MAX_QUEUED_MESSAGES waiting on one conversation, messages get 429 rate_limited with Retry-After; the accepted ones are logged once; other conversations are not held up', async () => {
    await using h = await startGatewayHarness({ rateLimitPerSecond: 0, maxQueuedMessages: 10 });
    await h.acme.createConversation({ id: 'busy' });
    await h.acme.createConversation({ id: 'quiet' });
    const [answers, quiet] = await Promise.all([flood(h, 'busy', 200), h.acme.sendMessage('quiet', 'hello')]);
    expect(quiet.appended).toBe(true);
    const refused = answers.filter((answer) => answer.status !== 202);
    expect(refused.length).toBeGreaterThan(0);
    for (const answer of refused) expect(answer).toMatchObject({ status: 429, code: 'rate_limited', retryAfter: '1' });
    const accepted = answers.filter((answer) => answer.status === 202).map((answer) => answer.index);
    const logged = floodIndexes((await h.log.readEvents({ tenant: 'acme', conversation: 'busy' })).events);
    expect([...logged].sort((a, b) => a - b)).toEqual(accepted);
  });

  it('on the socket, frames past the rate are refused with error frames that carry their ids; the acked messages are logged once, in the order sent', async () => {
    await using h = await startGatewayHarness();
    await h.acme.createConversation({ id: 'socket-flood' });
    const socket = await liveSocket(h, 'socket-flood');
    const from = socket.frames.length;
    for (let index = 0; index < 100; index += 1)
      socket.socket.send(JSON.stringify({ type: 'message', id: `m${index}`, text: `flood ${index}` }));
    const replies = async () =>
      socket.frames.slice(from).filter((frame) => frame.type === 'ack' || frame.type === 'error');
    await expect.poll(async () => (await replies()).length, { timeout: 10_000 }).toBe(100);
    const answered = (await replies()) as { type: string; id?: string; code?: string }[];
    socket.socket.close();
    expect(new Set(answered.map((frame) => frame.id)).size).toBe(100);
    const refused = answered.filter((frame) => frame.type === 'error');
    expect(refused.length).toBeGreaterThan(0);
    for (const frame of refused) expect(frame.code).toBe('rate_limited');
    const acked = answered
      .filter((frame) => frame.type === 'ack')
      .map((frame) => Number(frame.id!.slice(1)))
      .sort((a, b) => a - b);
    expect(floodIndexes((await h.log.readEvents({ tenant: 'acme', conversation: 'socket-flood' })).events)).toEqual(
      acked,
    );
  });
});
