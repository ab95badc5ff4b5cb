import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { WebhookEvent } from '@flotilla/api';
import { WEBHOOK_DELIVERIES } from '@flotilla/bus';
import { startNats, type NatsTestServer } from '@flotilla/testing';
import {
  DeadLetterStore,
  enqueueDelivery,
  ensureDeliveryQueue,
  verifySignature,
  WebhookDirectory,
  WebhookRegistry,
  type DeliveryJob,
} from '@flotilla/webhooks';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AddressPolicy } from './address-policy.js';
import { createDeliveryHandler } from './delivery-handler.js';
import { deliveryOf } from './test-support/delivery.js';
import { postWebhook } from './webhook-post.js';
import { DEFAULT_WEBHOOKS_SETTINGS, type WebhooksConfig } from './webhooks-config.js';

let nats: NatsTestServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let registry: WebhookRegistry;
let directory: WebhookDirectory;
let deadLetters: DeadLetterStore;
let receiver: Server;
let receiverUrl: string;
const key = randomBytes(32);
/** The receiver's answer to each request, and what it got. */
let status = 200;
const requests: { headers: Record<string, string | string[] | undefined>; body: string }[] = [];

beforeAll(async () => {
  nats = await startNats({ preferExternal: false });
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  registry = await WebhookRegistry.open(nc, { key });
  directory = await WebhookDirectory.follow(nc, { key });
  deadLetters = await DeadLetterStore.create(nc, { replicas: 1, maxAgeMs: 0 });
  await ensureDeliveryQueue(jsm, { replicas: 1, duplicateWindowMs: 60_000 });
  receiver = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      requests.push({ headers: request.headers, body });
      response.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  directory?.close();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  await nc?.close();
  await nats?.[Symbol.asyncDispose]();
});

const config: WebhooksConfig = {
  ...DEFAULT_WEBHOOKS_SETTINGS,
  maxAttempts: 3,
  retryBaseMs: 1_000,
  retryMaxMs: 8_000,
  timeoutMs: 2_000,
  addresses: AddressPolicy.parse('127.0.0.1', 'FLOTILLA_WEBHOOK_ALLOWED_NETWORKS'),
};
const handler = (overrides: Partial<WebhooksConfig> = {}) =>
  createDeliveryHandler({
    directory,
    deadLetter: (tenant, letter) => deadLetters.record(tenant, letter),
    config: { ...config, ...overrides },
    post: postWebhook,
    random: () => 0.5,
  });

let counter = 0;
function event(tenant: string): WebhookEvent {
  counter += 1;
  return {
    v: 1,
    id: `evt_${String(counter).padStart(32, '0')}`,
    type: 'conversation.finished',
    created_at: '2026-01-01T00:00:00.000Z',
    tenant,
    data: { conversation: 'c1', seq: 4, status: 'finished', previous_status: 'running' },
  };
}

/** Queues a job and returns it as the consumer would deliver it for the nth time. */
async function queue(job: DeliveryJob, attempt = 1) {
  await enqueueDelivery(jetstream(nc), job);
  const info = await jsm.streams.info(WEBHOOK_DELIVERIES.stream);
  return deliveryOf(jsm, WEBHOOK_DELIVERIES.stream, WEBHOOK_DELIVERIES.subjectPrefix, info.state.last_seq, attempt);
}

async function registered(tenant: string, url = receiverUrl) {
  const created = await registry.create(tenant, { url, events: ['conversation.finished'] }, 0);
  await directory.caughtUp();
  return created;
}
const jobFor = (tenant: string, webhook: string): DeliveryJob => ({
  v: 1,
  tenant,
  webhook,
  enqueued_at: '2026-01-01T00:00:01.000Z',
  event: event(tenant),
});

describe('the webhooks delivery handler', () => {
  it('POSTs the event signed with the webhook secret, with its id, kind, webhook and attempt; a 2xx acknowledges it', async () => {
    const { webhook, secret } = await registered('acme');
    status = 204;
    const job = jobFor('acme', webhook.id);
    expect(await handler()(await queue(job))).toEqual({ ack: true, outcome: 'delivered' });
    const request = requests.at(-1)!;
    expect(JSON.parse(request.body)).toEqual(job.event);
    expect(request.headers['flotilla-event-id']).toBe(job.event.id);
    expect(request.headers['flotilla-event-type']).toBe('conversation.finished');
    expect(request.headers['flotilla-webhook-id']).toBe(webhook.id);
    expect(request.headers['flotilla-delivery-attempt']).toBe('1');
    expect(verifySignature(secret, request.headers['flotilla-signature'] as string, request.body)).toMatchObject({
      ok: true,
    });
    expect(
      verifySignature('whsec_someone-else', request.headers['flotilla-signature'] as string, request.body),
    ).toMatchObject({ ok: false });
  });

  it('leaves a failed delivery to JetStream with the retry delay, and dead-letters it at the last attempt', async () => {
    const { webhook } = await registered('acme');
    status = 503;
    const job = jobFor('acme', webhook.id);
    expect(await handler()(await queue(job, 1))).toEqual({ ack: false, outcome: 'retry', delayMs: 750 });
    expect(await handler()(await queue(job, 2))).toEqual({ ack: false, outcome: 'retry', delayMs: 1_500 });
    expect(await deadLetters.list('acme', webhook.id, 10)).toEqual([]);
    expect(await handler()(await queue(job, 3))).toEqual({ ack: true, outcome: 'dead_lettered' });
    expect(await deadLetters.list('acme', webhook.id, 10)).toEqual([
      {
        webhook: webhook.id,
        event: job.event,
        attempts: 3,
        enqueued_at: job.enqueued_at,
        last_attempt_at: expect.any(String),
        last_error: 'HTTP 503',
        last_status: 503,
      },
    ]);
    expect(requests.at(-1)!.headers['flotilla-delivery-attempt']).toBe('3');
  });

  it('dead-letters at once a webhook whose address may not be reached, without connecting', async () => {
    const { webhook } = await registered('acme', 'http://169.254.169.254/latest/meta-data/');
    const before = requests.length;
    expect(await handler()(await queue(jobFor('acme', webhook.id)))).toEqual({ ack: true, outcome: 'dead_lettered' });
    const [letter] = await deadLetters.list('acme', webhook.id, 10);
    expect(letter).toMatchObject({
      attempts: 1,
      last_status: null,
      last_error: expect.stringMatching(/169\.254\.169\.254 .*not reached by webhooks/),
    });
    // loopback too, when the operator has not allowed it
    const { webhook: local } = await registered('acme');
    expect(
      await handler({ addresses: AddressPolicy.parse('', 'FLOTILLA_WEBHOOK_ALLOWED_NETWORKS') })(
        await queue(jobFor('acme', local.id)),
      ),
    ).toEqual({ ack: true, outcome: 'dead_lettered' });
    expect(requests.length).toBe(before);
  });

  it('drops a delivery whose webhook was removed, and one that is not the job of its subject', async () => {
    const { webhook } = await registered('acme');
    const job = jobFor('acme', webhook.id);
    const delivery = await queue(job);
    await registry.remove('acme', webhook.id);
    // the directory follows the registry: until it has seen the removal, the webhook is still delivered to
    await directory.caughtUp();
    expect(await handler()(delivery)).toEqual({ ack: true, outcome: 'webhook_removed' });
    // a job claiming another tenant than its subject's
    const { webhook: globex } = await registered('globex');
    await jetstream(nc).publish(
      `${WEBHOOK_DELIVERIES.subjectPrefix}.acme.${globex.id}`,
      JSON.stringify(jobFor('globex', globex.id)),
    );
    const info = await jsm.streams.info(WEBHOOK_DELIVERIES.stream);
    const before = requests.length;
    expect(
      await handler()(
        await deliveryOf(jsm, WEBHOOK_DELIVERIES.stream, WEBHOOK_DELIVERIES.subjectPrefix, info.state.last_seq),
      ),
    ).toEqual({ ack: true, outcome: 'invalid' });
    expect(requests.length).toBe(before);
  });
});
