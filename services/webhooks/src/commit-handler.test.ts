import { randomBytes } from 'node:crypto';
import { WEBHOOK_DELIVERIES } from '@flotilla/bus';
import { draftEvent, type ConversationStatus } from '@flotilla/events';
import { appendWithRetry, EventLog, type ConversationRef, type StoredCommit } from '@flotilla/log';
import { startNats, type NatsTestServer } from '@flotilla/testing';
import {
  enqueueDelivery,
  ensureDeliveryQueue,
  parseDeliveryJob,
  WebhookDirectory,
  WebhookRegistry,
  type DeliveryJob,
} from '@flotilla/webhooks';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCommitHandler } from './commit-handler.js';
import { ConversationStates } from './conversation-states.js';
import { deliveryOf } from './test-support/delivery.js';

let nats: NatsTestServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let log: EventLog;
let registry: WebhookRegistry;
let directory: WebhookDirectory;
const key = randomBytes(32);

beforeAll(async () => {
  nats = await startNats({ preferExternal: false });
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  log = await EventLog.open(nc);
  registry = await WebhookRegistry.open(nc, { key });
  directory = await WebhookDirectory.follow(nc, { key });
  await ensureDeliveryQueue(jsm, { replicas: 1, duplicateWindowMs: 60_000 });
});
afterAll(async () => {
  directory?.close();
  await nc?.close();
  await nats?.[Symbol.asyncDispose]();
});

const handler = (states = new ConversationStates(log)) =>
  createCommitHandler({ directory, states, enqueue: (job) => enqueueDelivery(jetstream(nc), job) });
const setStatus = (ref: ConversationRef, status: ConversationStatus): Promise<StoredCommit | null> =>
  appendWithRetry(log, ref, () => [draftEvent({ ...ref, source: 'system' }, 'state_change', { status })]);
const say = (ref: ConversationRef): Promise<StoredCommit | null> =>
  appendWithRetry(log, ref, () => [
    draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'hi' }] }),
  ]);
const delivered = (commit: StoredCommit | null, count = 1) =>
  deliveryOf(jsm, log.streamName, log.subjectPrefix, commit!.streamSeq, count);
const streamLastSeq = async (): Promise<number> => (await jsm.streams.info(log.streamName)).state.last_seq;

/** Every delivery in the queue now (nobody consumes it in these tests). */
async function queued(): Promise<DeliveryJob[]> {
  const info = await jsm.streams.info(WEBHOOK_DELIVERIES.stream);
  const jobs: DeliveryJob[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq += 1) {
    const message = await jsm.streams.getMessage(WEBHOOK_DELIVERIES.stream, { seq }).catch(() => null);
    const parsed = message ? parseDeliveryJob(message.data) : undefined;
    if (parsed?.ok) jobs.push(parsed.job);
  }
  return jobs;
}

describe('the webhooks commit handler', () => {
  it("queues one delivery per event kind a webhook of the commit's tenant chose, for commits after its registration only", async () => {
    const ref = { tenant: 'acme', conversation: 'queued' };
    const early = await setStatus(ref, 'running');
    const { webhook: all } = await registry.create(
      'acme',
      { url: 'https://hooks.example.com/all', events: ['conversation.status_changed', 'conversation.finished'] },
      await streamLastSeq(),
    );
    const { webhook: finishedOnly } = await registry.create(
      'acme',
      { url: 'https://hooks.example.com/finished', events: ['conversation.finished'] },
      await streamLastSeq(),
    );
    const { webhook: other } = await registry.create(
      'globex',
      { url: 'https://hooks.example.com/globex', events: ['conversation.status_changed', 'conversation.finished'] },
      0,
    );
    const handle = handler();
    // registered after this commit: it gets nothing of it
    expect(await handle(await delivered(early))).toEqual({ ack: true, outcome: 'no_webhooks' });
    const before = (await queued()).length;
    expect(await handle(await delivered(await say(ref)))).toEqual({ ack: true, outcome: 'no_status_change' });
    expect(await handle(await delivered(await setStatus(ref, 'finished')))).toEqual({ ack: true, outcome: 'enqueued' });
    const jobs = (await queued()).slice(before);
    expect(
      jobs
        .map(
          (job) =>
            `${job.webhook === all.id ? 'all' : job.webhook === finishedOnly.id ? 'finished-only' : 'other'} ${job.event.type}`,
        )
        .sort(),
    ).toEqual(['all conversation.finished', 'all conversation.status_changed', 'finished-only conversation.finished']);
    expect(jobs.every((job) => job.tenant === 'acme' && job.event.tenant === 'acme' && job.webhook !== other.id)).toBe(
      true,
    );
    expect(jobs.find((job) => job.event.type === 'conversation.status_changed')?.event.data).toMatchObject({
      conversation: 'queued',
      status: 'finished',
      previous_status: 'running',
    });
  });

  it('stores a delivery once when its commit is handled again, and decides the status before from the log when it holds no state for it', async () => {
    const ref = { tenant: 'acme', conversation: 'redelivered' };
    await setStatus(ref, 'running');
    await say(ref);
    const finished = await setStatus(ref, 'finished');
    const before = (await queued()).length;
    // two fresh handlers (two instances, or one restarted): each reads the status before from the log
    expect(await handler()(await delivered(finished))).toEqual({ ack: true, outcome: 'enqueued' });
    expect(await handler()(await delivered(finished, 2))).toEqual({ ack: true, outcome: 'enqueued' });
    const jobs = (await queued()).slice(before);
    // acme's two webhooks that chose `finished` (the first test's) each have it once, with the status before read from the log
    const choosing = (await registry.list('acme')).filter((webhook) =>
      webhook.events.includes('conversation.finished'),
    );
    expect(choosing).toHaveLength(2);
    expect(
      jobs
        .filter((job) => job.event.type === 'conversation.finished')
        .map((job) => ('previous_status' in job.event.data ? job.event.data.previous_status : undefined)),
    ).toEqual(['running', 'running']);
    expect(new Set(jobs.map((job) => `${job.webhook}.${job.event.id}`)).size).toBe(jobs.length);
  });

  it('sends nothing when the status is set to what it was, and nothing for a foreign or corrupt message', async () => {
    const ref = { tenant: 'acme', conversation: 'unchanged' };
    const handle = handler();
    await handle(await delivered(await setStatus(ref, 'running')));
    const before = (await queued()).length;
    expect(await handle(await delivered(await setStatus(ref, 'running')))).toEqual({ ack: true, outcome: 'no_events' });
    await jetstream(nc).publish('flotilla.ev.acme.unchanged.user', 'not a commit');
    expect(await handle(await delivered({ streamSeq: await streamLastSeq() } as StoredCommit))).toEqual({
      ack: true,
      outcome: 'invalid',
    });
    expect((await queued()).length).toBe(before);
  });

  it('sees a webhook registered just before the commit, however fresh (the directory catches up first)', async () => {
    const handle = handler();
    for (let round = 0; round < 3; round += 1) {
      const ref = { tenant: `fresh${round}`, conversation: 'c' };
      await registry.create(
        ref.tenant,
        { url: 'https://hooks.example.com/fresh', events: ['conversation.status_changed'] },
        await streamLastSeq(),
      );
      expect(await handle(await delivered(await setStatus(ref, 'running')))).toEqual({
        ack: true,
        outcome: 'enqueued',
      });
    }
  });
});
