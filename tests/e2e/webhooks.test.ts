import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { WebhookEvent, type CreatedWebhook, type DeadLetter } from '@flotilla/api';
import type { ConversationStatus, Event } from '@flotilla/events';
import { generateSecretsKey } from '@flotilla/secrets';
import { verifySignature } from '@flotilla/webhooks';
import { describe, expect, it } from 'vitest';
import { runToExit } from '../support/run-to-exit.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

const FLOTILLA = fileURLToPath(new URL('../../services/cli/bin/flotilla', import.meta.url));
const MAX_ATTEMPTS = 4;

type Request = {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly status: number;
  readonly signature: 'valid' | string;
};

/**
 * A webhook receiver on loopback: it verifies every request's signature with the secret its
 * webhook was registered with (as docs/api.md tells receivers to), answers 500 to the first
 * `failures` attempts of each event id (Infinity: always), and keeps the events it accepted,
 * de-duplicated by event id.
 */
class Receiver implements AsyncDisposable {
  secret = '';
  readonly requests: Request[] = [];
  /** Accepted events by id (a redelivered event counts once). */
  readonly accepted = new Map<string, WebhookEvent>();
  readonly #attempts = new Map<string, number>();

  private constructor(
    readonly server: Server,
    readonly failures: number,
  ) {}

  static async start(failures: number): Promise<Receiver> {
    const server = createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      request.on('end', () => response.writeHead(receiver.receive(request.headers, body)).end());
    });
    const receiver = new Receiver(server, failures);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/flotilla`;
  }

  receive(headers: IncomingHttpHeaders, body: string): number {
    const check = verifySignature(this.secret, headers['flotilla-signature'] as string | undefined, body);
    if (!check.ok) {
      this.requests.push({ headers, body, status: 400, signature: check.reason });
      return 400;
    }
    const event = WebhookEvent.parse(JSON.parse(body));
    const attempt = (this.#attempts.get(event.id) ?? 0) + 1;
    this.#attempts.set(event.id, attempt);
    const status = attempt <= this.failures ? 500 : 204;
    this.requests.push({ headers, body, status, signature: 'valid' });
    if (status === 204) this.accepted.set(event.id, event);
    return status;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** What a receiver must get for a conversation, worked out from its log apart from the service: each real status change, and a finish. */
function expectedEvents(
  events: readonly Event[],
  kinds: readonly string[],
): {
  type: string;
  conversation: string;
  seq: number;
  status: ConversationStatus;
  previous_status: ConversationStatus;
}[] {
  const expected: {
    type: string;
    conversation: string;
    seq: number;
    status: ConversationStatus;
    previous_status: ConversationStatus;
  }[] = [];
  let status: ConversationStatus = 'idle';
  for (const event of events) {
    if (event.type !== 'state_change' || event.status === undefined || event.status === status) continue;
    const change = { conversation: event.conversation, seq: event.seq, status: event.status, previous_status: status };
    if (kinds.includes('conversation.status_changed'))
      expected.push({ type: 'conversation.status_changed', ...change });
    if (event.status === 'finished' && kinds.includes('conversation.finished'))
      expected.push({ type: 'conversation.finished', ...change });
    status = event.status;
  }
  return expected;
}

const summary = (event: WebhookEvent) => ({
  type: event.type,
  conversation: event.data.conversation,
  seq: event.data.seq,
  status: event.data.status,
  previous_status: 'previous_status' in event.data ? event.data.previous_status : undefined,
});
const byPosition = (a: { seq: number; type: string }, b: { seq: number; type: string }) =>
  a.seq - b.seq || a.type.localeCompare(b.type);

async function register(
  system: RunningTestSystem,
  key: string,
  url: string,
  events: readonly string[],
): Promise<CreatedWebhook> {
  const created = await system.api('POST', '/webhooks', { url, events }, key);
  expect(created.status, created.text).toBe(201);
  return created.body as CreatedWebhook;
}

describe('webhooks through the services', () => {
  it('deliver each event once after de-duplication to a receiver that fails twice, signed; dead-letter what a receiver never takes; never cross tenants', async () => {
    await using flaky = await Receiver.start(2);
    await using broken = await Receiver.start(Number.POSITIVE_INFINITY);
    await using other = await Receiver.start(0);
    await using system = await startTestSystem({
      gateway: true,
      webhooks: 1,
      env: { FLOTILLA_SECRETS_KEY: generateSecretsKey() },
      // the receivers are on loopback, which webhooks never reach unless the operator allows it
      webhooksEnv: {
        FLOTILLA_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
        FLOTILLA_WEBHOOK_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
        FLOTILLA_WEBHOOK_RETRY_BASE_MS: '100',
        FLOTILLA_WEBHOOK_RETRY_MAX_MS: '400',
      },
    });
    const kinds = ['conversation.status_changed', 'conversation.finished'];
    const acmeHook = await register(system, system.apiKey, flaky.url, kinds);
    flaky.secret = acmeHook.secret;
    const deadHook = await register(system, system.apiKey, broken.url, ['conversation.finished']);
    broken.secret = deadHook.secret;
    const globexHook = await register(system, system.otherApiKey, other.url, kinds);
    other.secret = globexHook.secret;
    // the metadata endpoint: refused by the service (not on the allow-list), without a connection
    const metadataHook = await register(system, system.apiKey, 'http://169.254.169.254/latest/meta-data/', [
      'conversation.finished',
    ]);

    // bad registrations: clear 400s from the gateway
    const ftp = await system.api('POST', '/webhooks', { url: 'ftp://hooks.example.com/x', events: kinds });
    expect(ftp.status).toBe(400);
    expect(ftp.text).toMatch(/body\.url: must be an absolute http:\/\/ or https:\/\/ URL/);
    const unknown = await system.api('POST', '/webhooks', { url: flaky.url, events: ['conversation.exploded'] });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toMatch(/unknown event kind \\"conversation\.exploded\\"/);

    const acme = { tenant: 'acme', conversation: 'hooked-acme' };
    const globex = { tenant: 'globex', conversation: 'hooked-globex' };
    await Promise.all([
      system.start(acme, { id: acme.conversation, steps: 2 }),
      system.start(globex, { id: globex.conversation, steps: 1 }),
    ]);
    await system.waitForStatus([acme, globex], ['finished'], 90_000);

    // the flaky receiver: every event of the log once, after two refused attempts each
    const expectedAcme = expectedEvents(await system.events(acme), kinds);
    expect(expectedAcme.map((event) => event.type)).toEqual([
      'conversation.status_changed',
      'conversation.status_changed',
      'conversation.finished',
    ]);
    await expect.poll(() => flaky.accepted.size, { timeout: 60_000 }).toBe(expectedAcme.length);
    expect([...flaky.accepted.values()].map(summary).sort(byPosition)).toEqual([...expectedAcme].sort(byPosition));
    for (const event of flaky.accepted.values()) {
      const attempts = flaky.requests.filter((request) => request.headers['flotilla-event-id'] === event.id);
      expect(
        attempts.slice(0, 3).map((request) => [request.status, request.headers['flotilla-delivery-attempt']]),
      ).toEqual([
        [500, '1'],
        [500, '2'],
        [204, '3'],
      ]);
      expect(
        attempts.every(
          (request) =>
            request.headers['flotilla-webhook-id'] === acmeHook.id &&
            request.headers['flotilla-event-type'] === event.type,
        ),
      ).toBe(true);
    }
    // every request was signed with the webhook's secret, and the check can fail: another secret does not verify
    expect(flaky.requests.map((request) => request.signature).filter((signature) => signature !== 'valid')).toEqual([]);
    const sample = flaky.requests[0]!;
    expect(verifySignature(deadHook.secret, sample.headers['flotilla-signature'] as string, sample.body)).toMatchObject(
      { ok: false },
    );
    expect(
      verifySignature(acmeHook.secret, sample.headers['flotilla-signature'] as string, `${sample.body} `),
    ).toMatchObject({ ok: false });

    // the other tenant's receiver: its own events only, and no acme receiver got one of them
    const expectedGlobex = expectedEvents(await system.events(globex), kinds);
    await expect.poll(() => other.accepted.size, { timeout: 30_000 }).toBe(expectedGlobex.length);
    expect([...other.accepted.values()].map(summary).sort(byPosition)).toEqual([...expectedGlobex].sort(byPosition));
    expect([...other.accepted.values()].every((event) => event.tenant === 'globex')).toBe(true);
    for (const receiver of [flaky, broken]) {
      expect(
        receiver.requests.some(
          (request) => request.body.includes('hooked-globex') || request.body.includes('"tenant":"globex"'),
        ),
      ).toBe(false);
    }
    expect(other.requests.some((request) => request.body.includes('hooked-acme'))).toBe(false);

    // the receiver that always fails: a dead letter after the last attempt, readable over REST and with the CLI
    const deadLetters = async (id: string): Promise<DeadLetter[]> =>
      ((await system.api('GET', `/webhooks/${id}/dead-letters`)).body as { dead_letters: DeadLetter[] }).dead_letters;
    await expect.poll(async () => (await deadLetters(deadHook.id)).length, { timeout: 60_000 }).toBe(1);
    const [letter] = await deadLetters(deadHook.id);
    const finished = expectedAcme.find((event) => event.type === 'conversation.finished')!;
    expect(letter).toMatchObject({
      webhook: deadHook.id,
      attempts: MAX_ATTEMPTS,
      last_error: 'HTTP 500',
      last_status: 500,
    });
    expect(summary(letter!.event)).toEqual(finished);
    expect(
      broken.requests
        .filter((request) => request.headers['flotilla-event-id'] === letter!.event.id)
        .map((request) => request.headers['flotilla-delivery-attempt']),
    ).toEqual(['1', '2', '3', '4']);
    // another tenant cannot read it
    expect(
      (await system.api('GET', `/webhooks/${deadHook.id}/dead-letters`, undefined, system.otherApiKey)).status,
    ).toBe(404);
    const cli = await runToExit(FLOTILLA, ['webhook', 'dead', deadHook.id, '--json'], {
      env: { ...process.env, FLOTILLA_URL: system.gatewayUrl, FLOTILLA_API_KEY: system.apiKey },
      cwd: tmpdir(),
      timeoutMs: 60_000,
    });
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual([letter]);

    // the metadata endpoint's webhook: dead-lettered at its first attempt, saying why
    await expect.poll(async () => (await deadLetters(metadataHook.id)).length, { timeout: 30_000 }).toBe(1);
    expect((await deadLetters(metadataHook.id))[0]).toMatchObject({
      attempts: 1,
      last_status: null,
      last_error: expect.stringMatching(/169\.254\.169\.254 .*not reached by webhooks/),
    });
  }, 240_000);
});
