import { randomBytes } from 'node:crypto';
import { MAX_WEBHOOKS_PER_TENANT, type CreateWebhookBody, type DeadLetter } from '@flotilla/api';
import { Buckets } from '@flotilla/bus';
import { startNats, type NatsTestServer } from '@flotilla/testing';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeadLetterStore } from './dead-letter-store.js';
import { WebhooksError } from './errors.js';
import { publicWebhook } from './stored-webhook.js';
import { WebhookDirectory } from './webhook-directory.js';
import { WebhookRegistry } from './webhook-registry.js';

let nats: NatsTestServer;
let nc: NatsConnection;
const key = randomBytes(32);
const body: CreateWebhookBody = { url: 'https://hooks.example.com/flotilla', events: ['conversation.finished'] };

beforeAll(async () => {
  nats = await startNats({ preferExternal: false });
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  await nc?.close();
  await nats?.[Symbol.asyncDispose]();
});

/** Every message of the registrations' stream, subjects and bodies, as text. */
async function storedText(): Promise<string> {
  const jsm = await jetstreamManager(nc);
  const stream = `KV_${Buckets.webhooks}`;
  const info = await jsm.streams.info(stream);
  const parts: string[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq += 1) {
    const message = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (message) parts.push(message.subject, Buffer.from(message.data).toString('latin1'));
  }
  return parts.join('\n');
}

describe('the webhook registry and directory', () => {
  it('creates a webhook whose secret is shown once and stored only encrypted; the directory follows it; remove takes it away', async () => {
    const registry = await WebhookRegistry.open(nc, { key });
    const directory = await WebhookDirectory.follow(nc, { key });
    try {
      const { webhook, secret } = await registry.create('acme', { ...body, description: 'ci' }, 41);
      expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
      expect(webhook).toMatchObject({
        tenant: 'acme',
        url: body.url,
        events: ['conversation.finished'],
        description: 'ci',
        starts_after_stream_seq: 41,
      });
      expect(publicWebhook(webhook)).not.toHaveProperty('secret');
      // the secret is nowhere in the bucket in clear
      const stored = await storedText();
      expect(stored).toContain(webhook.id);
      expect(stored).not.toContain(secret);
      expect(stored).not.toContain(secret.slice(6, 30));
      // listed and got for its tenant only
      expect((await registry.list('acme')).map((entry) => entry.id)).toEqual([webhook.id]);
      expect(await registry.list('globex')).toEqual([]);
      expect(await registry.get('globex', webhook.id)).toBeUndefined();
      expect(await registry.remove('globex', webhook.id)).toBe(false);
      // the directory sees it once caught up, and decrypts its secret
      await directory.caughtUp();
      expect(directory.forTenant('acme').map((entry) => entry.id)).toEqual([webhook.id]);
      expect(directory.forTenant('globex')).toEqual([]);
      expect(directory.secretOf(directory.find('acme', webhook.id)!)).toBe(secret);
      expect(await registry.remove('acme', webhook.id)).toBe(true);
      expect(await registry.get('acme', webhook.id)).toBeUndefined();
      await directory.caughtUp();
      expect(directory.find('acme', webhook.id)).toBeUndefined();
      // purged: no older revision keeps the ciphertext
      expect(await storedText()).not.toContain(`"id":"${webhook.id}"`);
    } finally {
      directory.close();
    }
  });

  it('a ciphertext copied to another registration, or read with another key, does not decrypt', async () => {
    const registry = await WebhookRegistry.open(nc, { key });
    const first = await registry.create('acme', body, 0);
    const second = await registry.create('acme', body, 0);
    const other = await WebhookDirectory.follow(nc, { key: randomBytes(32) });
    const directory = await WebhookDirectory.follow(nc, { key });
    try {
      await other.caughtUp();
      expect(() => other.secretOf(other.find('acme', first.webhook.id)!)).toThrow(WebhooksError);
      await directory.caughtUp();
      const swapped = { ...directory.find('acme', second.webhook.id)!, secret: first.webhook.secret };
      expect(() => directory.secretOf(swapped)).toThrow(/cannot be decrypted/);
    } finally {
      other.close();
      directory.close();
      await registry.remove('acme', first.webhook.id);
      await registry.remove('acme', second.webhook.id);
    }
  });

  it(`refuses a tenant's ${MAX_WEBHOOKS_PER_TENANT + 1}th webhook, and ignores a stored value that does not parse`, async () => {
    const corrupt: string[] = [];
    const registry = await WebhookRegistry.open(nc, { key, onCorrupt: (entry) => corrupt.push(entry) });
    for (let index = 0; index < MAX_WEBHOOKS_PER_TENANT; index += 1) await registry.create('initech', body, 0);
    await expect(registry.create('initech', body, 0)).rejects.toMatchObject({ code: 'limit_reached' });
    expect(await registry.list('umbrella')).toEqual([]);
    const raw = await new Kvm(jetstream(nc)).open(Buckets.webhooks);
    await raw.put('umbrella.wh_00000000000000000000000000000000', 'not json');
    expect(await registry.list('umbrella')).toEqual([]);
    expect(corrupt).toEqual(['umbrella.wh_00000000000000000000000000000000']);
  });

  it('catches up with a registration written a moment before, on a directory that was following already', async () => {
    const registry = await WebhookRegistry.open(nc, { key });
    const directory = await WebhookDirectory.follow(nc, { key });
    try {
      for (let round = 0; round < 5; round += 1) {
        const { webhook } = await registry.create('hooli', body, 0);
        await directory.caughtUp();
        expect(directory.find('hooli', webhook.id)?.id).toBe(webhook.id);
      }
    } finally {
      directory.close();
    }
  });
});

describe('dead letters', () => {
  const letter = (webhook: string, event: string, at: string): DeadLetter => ({
    webhook,
    event: {
      v: 1,
      id: event,
      type: 'conversation.finished',
      created_at: at,
      tenant: 'acme',
      data: { conversation: 'c1', seq: 3, status: 'finished', previous_status: 'running' },
    },
    attempts: 3,
    enqueued_at: at,
    last_attempt_at: at,
    last_error: 'HTTP 500',
    last_status: 500,
  });
  const hook = `wh_${'a'.repeat(32)}`;

  it('are none before the webhooks service made their bucket, then listed newest first per webhook, and removed with it', async () => {
    const bound = await DeadLetterStore.bind(nc);
    expect(await bound.list('acme', hook, 10)).toEqual([]);
    const store = await DeadLetterStore.create(nc, { replicas: 1, maxAgeMs: 60_000 });
    const older = letter(hook, `evt_${'1'.repeat(32)}`, '2026-01-01T00:00:01.000Z');
    const newer = letter(hook, `evt_${'2'.repeat(32)}`, '2026-01-01T00:00:02.000Z');
    await store.record('acme', older);
    await store.record('acme', newer);
    await store.record('acme', letter(`wh_${'b'.repeat(32)}`, `evt_${'3'.repeat(32)}`, '2026-01-01T00:00:03.000Z'));
    expect(await bound.list('acme', hook, 10)).toEqual([newer, older]);
    expect(await bound.list('acme', hook, 1)).toEqual([newer]);
    expect(await bound.list('globex', hook, 10)).toEqual([]);
    const info = await (await jetstreamManager(nc)).streams.info(`KV_${Buckets.webhookDeadLetters}`);
    expect(info.config.max_age).toBe(60_000 * 1_000_000);
    await bound.removeAll('acme', hook);
    expect(await bound.list('acme', hook, 10)).toEqual([]);
    expect(await bound.list('acme', `wh_${'b'.repeat(32)}`, 10)).toHaveLength(1);
  });
});
