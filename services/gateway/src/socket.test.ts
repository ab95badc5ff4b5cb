import { CloseCode } from '@flotilla/api';
import type { Event } from '@flotilla/events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACME_KEY, CREATED_EVENTS, startGatewayHarness, type GatewayHarness } from './test-support/gateway-harness.js';
import { openSocket, type Socket } from './test-support/http-probe.js';

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A raw socket on a conversation's events that authenticates (acme) in its first frame and records every frame. */
const rawSocket = (h: GatewayHarness, id: string, afterSeq = 0): Socket =>
  openSocket(h, `/v1/conversations/${id}/events`, { auth: { frame: ACME_KEY }, afterSeq });

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(10);
  }
}

describe('the event WebSocket', () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness({ socketHighWaterBytes: 64 * 1024, maxSubscribersPerConversation: 150 });
  });
  afterAll(async () => {
    await h?.[Symbol.asyncDispose]();
  });

  it('sends sync first, then the log in order with seqs, then live', async () => {
    await h.acme.createConversation({ id: 'order', message: 'hello' });
    await h.produce({ tenant: 'acme', conversation: 'order' }, 5);
    const raw = rawSocket(h, 'order');
    await until(() => raw.frames.some((frame) => frame.type === 'live'), 5_000, 'live');
    await h.produce({ tenant: 'acme', conversation: 'order' }, 3, 'later');
    // created (its state and agent spec) and the message: 3 events, then 5, then 3 more
    await until(() => raw.frames.filter((frame) => frame.type === 'event').length === 11, 5_000, '11 events');
    raw.socket.close();
    expect(raw.frames[0]).toMatchObject({
      type: 'sync',
      conversation: 'order',
      after_seq: 0,
      last_seq: 8,
      status: 'idle',
    });
    const kinds = raw.frames.map((frame) => (frame.type === 'event' ? frame.seq : frame.type));
    expect(kinds).toEqual(['sync', 1, 2, 3, 4, 5, 6, 7, 8, 'live', 9, 10, 11]);
  });

  it('resumes from any seq: disconnected at random points while the conversation keeps producing, the client sees every event exactly once, in order', async () => {
    const ref = { tenant: 'acme', conversation: 'resume' };
    await h.acme.createConversation({ id: 'resume' });
    const total = 400;
    let producing = true;
    const producer = (async () => {
      await h.produce(ref, total, 'resume');
      producing = false;
    })();
    const seen: number[] = [];
    let reconnects = 0;
    let afterSeq = 0;
    while (producing || afterSeq < total + CREATED_EVENTS) {
      const raw = rawSocket(h, 'resume', afterSeq);
      await raw.opened;
      // drop the connection after a random number of frames (or time)
      const dropAfter = 1 + Math.floor(Math.random() * 40);
      const started = Date.now();
      await until(
        () => raw.frames.filter((frame) => frame.type === 'event').length >= dropAfter || Date.now() - started > 300,
        10_000,
        'frames',
      );
      if (Math.random() < 0.5) raw.socket.terminate();
      else raw.socket.close();
      await raw.closed;
      for (const frame of raw.frames) if (frame.type === 'event') seen.push(frame.seq);
      afterSeq = seen.at(-1) ?? afterSeq;
      reconnects += 1;
      if (reconnects > 500) throw new Error('too many reconnects');
    }
    await producer;
    expect(seen).toEqual(Array.from({ length: total + CREATED_EVENTS }, (_, index) => index + 1));
    expect(reconnects).toBeGreaterThan(5);
  }, 60_000);

  it('the client library auto-resumes across drops with no gap and no duplicate', async () => {
    const ref = { tenant: 'acme', conversation: 'auto' };
    await h.acme.createConversation({ id: 'auto' });
    const seen: Event[] = [];
    const subscription = h.acme.subscribe('auto', { onEvent: (event) => seen.push(event) });
    await subscription.ready();
    const producer = h.produce(ref, 200, 'auto');
    // kill the gateway side of the sockets a few times while producing
    for (let drop = 0; drop < 5; drop += 1) {
      await delay(40 + Math.random() * 60);
      for (const client of h.gateway.app.websocketServer.clients) client.terminate();
    }
    await producer;
    await until(() => seen.length === 200 + CREATED_EVENTS, 15_000, 'all events');
    subscription.close();
    expect(seen.map((event) => event.seq)).toEqual(
      Array.from({ length: 200 + CREATED_EVENTS }, (_, index) => index + 1),
    );
  }, 30_000);

  it('closes a stalled client (4008) while 100 other subscribers keep receiving on time', async () => {
    const ref = { tenant: 'acme', conversation: 'stall' };
    await h.acme.createConversation({ id: 'stall' });
    const others = Array.from({ length: 100 }, () => rawSocket(h, 'stall'));
    const stalled = rawSocket(h, 'stall');
    await Promise.all([...others, stalled].map((raw) => raw.opened));
    await until(
      () => [...others, stalled].every((raw) => raw.frames.some((frame) => frame.type === 'live')),
      10_000,
      'all live',
    );
    // the stalled client stops reading: its TCP socket is paused, so the gateway's buffer for it fills
    (stalled.socket as unknown as { _socket: { pause(): void } })._socket.pause();
    const latencies: number[] = [];
    const received = new Map<number, number>();
    for (const raw of others) {
      raw.socket.removeAllListeners('message');
      raw.socket.on('message', (data: Buffer) => {
        // read the seq and the send time from the frame's head: parsing 100 × megabytes would measure the test, not the gateway
        const head = data.subarray(0, 2_048).toString();
        const seq = Number(/"seq":(\d+)/.exec(head)?.[1]);
        const sentAt = Number(/"text":"at (\d+)/.exec(head)?.[1]);
        if (!sentAt) return;
        latencies.push(Date.now() - sentAt);
        received.set(seq, (received.get(seq) ?? 0) + 1);
      });
    }
    const big = 'x'.repeat(16 * 1024);
    const count = 400; // 6.4 MB: more than the kernel's socket buffers (~4 MB) hold for the stalled client
    for (let index = 0; index < count; index += 1) {
      await h.append(ref, (r) => [
        {
          v: 1,
          type: 'message',
          tenant: r.tenant,
          conversation: r.conversation,
          source: 'agent',
          id: `big-${index}`,
          timestamp: new Date().toISOString(),
          role: 'assistant',
          content: [{ type: 'text', text: `at ${Date.now()} ${big}` }],
        } as never,
      ]);
    }
    await until(
      () => [...received.values()].reduce((sum, n) => sum + n, 0) === count * 100,
      20_000,
      'every subscriber got every event',
    );
    // the stalled client reads again: behind its backlog waits the close frame with the code and where to resume
    (stalled.socket as unknown as { _socket: { resume(): void } })._socket.resume();
    const closed = await Promise.race([stalled.closed, delay(20_000).then(() => ({ code: 0, reason: 'not closed' }))]);
    expect(closed.code).toBe(CloseCode.SlowConsumer);
    const resumeAt = Number(/after_seq=(\d+)/.exec(closed.reason)?.[1]);
    const stalledSeqs = stalled.frames.flatMap((frame) => (frame.type === 'event' ? [frame.seq] : []));
    expect(stalledSeqs.at(-1)).toBe(resumeAt);
    expect(resumeAt).toBeLessThan(count + 1);
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)]!;
    console.log(
      `stalled-client test: ${latencies.length} deliveries to 100 subscribers, p50 ${latencies[Math.floor(latencies.length / 2)]} ms, p99 ${p99} ms`,
    );
    expect(p99).toBeLessThan(2_000);
    for (const raw of others) raw.socket.close();
  }, 60_000);

  it('refuses a subscriber past the per-conversation limit with 4029', async () => {
    await using small = await startGatewayHarness({ maxSubscribersPerConversation: 2 });
    await small.acme.createConversation({ id: 'limit' });
    const first = rawSocket(small, 'limit');
    const second = rawSocket(small, 'limit');
    await until(() => first.frames.length > 0 && second.frames.length > 0, 5_000, 'two syncs');
    const third = rawSocket(small, 'limit');
    expect((await third.closed).code).toBe(CloseCode.TooManySubscribers);
    first.socket.close();
    await first.closed;
    await delay(50);
    const fourth = rawSocket(small, 'limit');
    await until(() => fourth.frames[0]?.type === 'sync', 5_000, 'a slot freed');
    second.socket.close();
    fourth.socket.close();
  });

  it('takes commands as frames and answers each with an ack or an error', async () => {
    await h.acme.createConversation({ id: 'frames' });
    const raw = rawSocket(h, 'frames');
    await until(() => raw.frames.some((frame) => frame.type === 'live'), 5_000, 'live');
    raw.socket.send(JSON.stringify({ type: 'message', id: 'm1', text: 'hi there' }));
    raw.socket.send(JSON.stringify({ type: 'approve', id: 'a1' }));
    raw.socket.send(JSON.stringify({ type: 'pause', id: 'p1' }));
    await until(
      () => ['m1', 'a1', 'p1'].every((id) => raw.frames.some((frame) => 'id' in frame && frame.id === id)),
      5_000,
      'answers',
    );
    const answer = (id: string) => raw.frames.find((frame) => 'id' in frame && frame.id === id);
    expect(answer('m1')).toMatchObject({ type: 'ack', appended: true, status: 'idle' });
    expect(answer('a1')).toMatchObject({ type: 'error', code: 'not_waiting' });
    expect(answer('p1')).toMatchObject({ type: 'ack', appended: false });
    await until(
      () =>
        raw.frames.some(
          (frame) => frame.type === 'event' && frame.event.type === 'message' && frame.event.source === 'user',
        ),
      5_000,
      'the message event',
    );
    raw.socket.close();
  });

  it('takes the reason of a pause or interrupt frame, validated as the REST routes validate it', async () => {
    await h.acme.createConversation({ id: 'reasons', message: 'hi' });
    const raw = rawSocket(h, 'reasons');
    await until(() => raw.frames.some((frame) => frame.type === 'live'), 5_000, 'live');
    const answer = (id: string) => raw.frames.find((frame) => 'id' in frame && frame.id === id);
    raw.socket.send(JSON.stringify({ type: 'pause', id: 'long', reason: 'x'.repeat(2_001) }));
    await until(() => answer('long') !== undefined, 5_000, 'the long reason refused');
    expect(answer('long')).toMatchObject({
      type: 'error',
      code: 'validation_failed',
      message: expect.stringMatching(/^Bad frame: reason: /),
    });
    raw.socket.send(JSON.stringify({ type: 'run', id: 'r1' }));
    await until(() => answer('r1') !== undefined, 5_000, 'the run');
    raw.socket.send(JSON.stringify({ type: 'pause', id: 'p1', reason: 'lunch break' }));
    await until(
      () => raw.frames.some((frame) => frame.type === 'event' && frame.event.type === 'pause'),
      5_000,
      'the pause event',
    );
    expect(answer('p1')).toMatchObject({ type: 'ack', appended: true, status: 'paused' });
    expect(raw.frames.find((frame) => frame.type === 'event' && frame.event.type === 'pause')).toMatchObject({
      event: { reason: 'lunch break', source: 'user' },
    });
    raw.socket.send(JSON.stringify({ type: 'run', id: 'r2' }));
    raw.socket.send(JSON.stringify({ type: 'interrupt', id: 'i1', reason: 'wrong task' }));
    await until(
      () => raw.frames.some((frame) => frame.type === 'event' && frame.event.type === 'interrupt'),
      5_000,
      'the interrupt event',
    );
    expect(raw.frames.find((frame) => frame.type === 'event' && frame.event.type === 'interrupt')).toMatchObject({
      event: { reason: 'wrong task' },
    });
    raw.socket.close();
  });

  it("refuses an after_seq past the conversation's last seq (4002, naming the last seq); at the tail, live reports the real tail", async () => {
    await h.acme.createConversation({ id: 'past' });
    const past = rawSocket(h, 'past', CREATED_EVENTS + 5);
    const closed = await past.closed;
    expect(closed.code).toBe(CloseCode.BadFrame);
    expect(closed.reason).toBe(
      `after_seq ${CREATED_EVENTS + 5} is past the last seq ${CREATED_EVENTS}: reconnect with after_seq at most ${CREATED_EVENTS}`,
    );
    expect(past.frames).toEqual([]);
    const atTail = rawSocket(h, 'past', CREATED_EVENTS);
    await until(() => atTail.frames.some((frame) => frame.type === 'live'), 5_000, 'live');
    expect(atTail.frames).toEqual([
      { type: 'sync', conversation: 'past', after_seq: CREATED_EVENTS, last_seq: CREATED_EVENTS, status: 'idle' },
      { type: 'live', last_seq: CREATED_EVENTS },
    ]);
    atTail.socket.close();
  });

  it('closes a socket whose header key is not valid with 4001, as a bad auth frame is; names an unknown query parameter (4002)', async () => {
    await h.acme.createConversation({ id: 'closes' });
    const badHeader = openSocket(h, '/v1/conversations/closes/events', {
      auth: { header: 'not-a-key-of-anyone-here' },
    });
    expect(await badHeader.closed).toEqual({ code: CloseCode.Unauthorized, reason: 'the API key is not valid' });
    expect(badHeader.frames).toEqual([]);
    const badFrame = openSocket(h, '/v1/conversations/closes/events', { auth: { frame: 'not-a-key-of-anyone-here' } });
    expect(await badFrame.closed).toEqual({ code: CloseCode.Unauthorized, reason: 'the API key is not valid' });
    const unknown = openSocket(h, '/v1/conversations/closes/events?after=3', { auth: { header: ACME_KEY } });
    expect(await unknown.closed).toEqual({
      code: CloseCode.BadFrame,
      reason: 'unknown query parameter "after": only after_seq is taken',
    });
    const negative = openSocket(h, '/v1/conversations/closes/events?after_seq=-1', { auth: { header: ACME_KEY } });
    expect(await negative.closed).toEqual({
      code: CloseCode.BadFrame,
      reason: 'after_seq must be a non-negative integer',
    });
    const past = openSocket(h, '/v1/conversations/closes/events', {
      auth: { header: ACME_KEY },
      afterSeq: CREATED_EVENTS + 1,
    });
    expect((await past.closed).code).toBe(CloseCode.BadFrame);
  });

  it('keeps a socket live across a nats-server restart: events appended after it arrive, in order, once', async () => {
    await using own = await startGatewayHarness();
    const ref = { tenant: 'acme', conversation: 'restart' };
    await own.acme.createConversation({ id: 'restart' });
    await own.produce(ref, 3, 'before');
    const seen: number[] = [];
    const subscription = own.acme.subscribe('restart', { onEvent: (event) => seen.push(event.seq) });
    await subscription.ready();
    await until(() => seen.length === CREATED_EVENTS + 3, 5_000, 'the first events');
    await own.nats.restart();
    await own.produce(ref, 5, 'after');
    await until(() => seen.length === CREATED_EVENTS + 8, 20_000, 'events after the restart');
    subscription.close();
    expect(seen).toEqual(Array.from({ length: CREATED_EVENTS + 8 }, (_, index) => index + 1));
  }, 60_000);

  it('answers a command frame sent right behind the auth frame (it waits for the subscription)', async () => {
    await h.acme.createConversation({ id: 'eager' });
    const raw = rawSocket(h, 'eager');
    await raw.opened;
    raw.socket.send(JSON.stringify({ type: 'message', id: 'first', text: 'sent before sync' }));
    await until(() => raw.frames.some((frame) => 'id' in frame && frame.id === 'first'), 5_000, 'the answer');
    expect(raw.frames[0]?.type).toBe('sync');
    expect(raw.frames.find((frame) => 'id' in frame && frame.id === 'first')).toMatchObject({
      type: 'ack',
      appended: true,
    });
    raw.socket.close();
  });
});
