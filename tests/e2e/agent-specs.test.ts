import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ConversationSpec, ErrorBody, ServerInfo } from '@flotilla/api';
import type { AgentSpecEvent, Event } from '@flotilla/events';
import { generateSecretsKey } from '@flotilla/secrets';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startBrainServer, taskMessage, type BrainServer } from '../support/brain-server.js';
import { startTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

const AT_REST = ['finished', 'error', 'stuck', 'waiting_for_confirmation'] as const;
const RETRY = { maxAttempts: 4, initialDelayMs: 100, maxDelayMs: 1_000 };

/** The operator's catalog of these tests: a second model server as the `second` profile, a template on it, and room for models of a spec's own on loopback. */
function catalogFor(second: BrainServer): Record<string, unknown> {
  return {
    profiles: {
      second: {
        provider: 'openai-chat',
        model: 'second-brain',
        baseURL: second.baseURL,
        apiKey: 'second-profile-key',
        timeoutMs: 60_000,
        retry: RETRY,
      },
    },
    templates: {
      reviewer: { llm: { profile: 'second' }, tools: ['terminal', 'finish'], limits: { maxIterationsPerRun: 50 } },
    },
    limits: { customModels: { baseURLs: ['http://127.0.0.1:'] }, maxIterationsPerRun: 500 },
  };
}

/** The request bodies a model server received for the conversation whose task names `id` (the task is JSON inside the body's JSON). */
function bodiesOf(
  server: BrainServer,
  id: string,
): { model: string; temperature?: number; tools?: { function: { name: string } }[] }[] {
  return server.requests
    .filter((body) => body.includes(`\\"id\\":\\"${id}\\"`))
    .map((body) => JSON.parse(body) as ReturnType<typeof bodiesOf>[number]);
}

/** Each request's model and tools. */
function requestsOf(server: BrainServer, id: string): { model: string; tools: string[] }[] {
  return bodiesOf(server, id).map((body) => ({
    model: body.model,
    tools: (body.tools ?? []).map((tool) => tool.function.name),
  }));
}

const specEvents = (events: readonly Event[]): AgentSpecEvent[] =>
  events.filter((event): event is AgentSpecEvent => event.type === 'agent_spec');

describe('agent specs per conversation, through the services', () => {
  it('runs two conversations of one deployment on two models with two tool sets: each request reaches its own model with its own tools', async () => {
    await using second = await startBrainServer({ record: true });
    await using system = await startTestSystem({
      gateway: true,
      recordModelRequests: true,
      catalog: catalogFor(second),
    });
    const info = (await system.api('GET', '/server-info')).body as ServerInfo;
    expect(info.agents.profiles.map((profile) => profile.name)).toEqual(['default', 'second']);
    expect(info.agents.templates).toEqual([{ name: 'reviewer', model: 'second-brain', tools: ['terminal', 'finish'] }]);
    expect(JSON.stringify(info)).not.toContain('second-profile-key');

    const task = (id: string) => taskMessage({ id, steps: 2, effects: system.effects });
    expect(
      (await system.api('POST', '/conversations', { id: 'on-default', message: task('on-default'), run: true })).status,
    ).toBe(201);
    const created = await system.api('POST', '/conversations', {
      id: 'on-second',
      template: 'reviewer',
      message: task('on-second'),
      run: true,
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ agent: { model: 'second-brain', template: 'reviewer' } });
    await system.waitForStatus(
      [
        { tenant: 'acme', conversation: 'on-default' },
        { tenant: 'acme', conversation: 'on-second' },
      ],
      AT_REST,
      60_000,
    );

    const defaults = requestsOf(system.brain, 'on-default');
    const seconds = requestsOf(second, 'on-second');
    // two steps of commands and the final answer, each on its own model and with its own tools
    expect(defaults.length).toBeGreaterThanOrEqual(3);
    expect(seconds.length).toBeGreaterThanOrEqual(3);
    for (const request of defaults)
      expect(request).toEqual({ model: 'brain', tools: ['terminal', 'file_editor', 'think', 'finish'] });
    for (const request of seconds) expect(request).toEqual({ model: 'second-brain', tools: ['terminal', 'finish'] });
    expect(requestsOf(system.brain, 'on-second')).toEqual([]);
    expect(requestsOf(second, 'on-default')).toEqual([]);

    // each log says how its steps were made: the whole spec, resolved, without a key
    for (const [id, model] of [
      ['on-default', 'brain'],
      ['on-second', 'second-brain'],
    ] as const) {
      const events = await system.events({ tenant: 'acme', conversation: id });
      expect(await system.status({ tenant: 'acme', conversation: id })).toBe('finished');
      const [spec, ...more] = specEvents(events);
      expect(more).toEqual([]);
      expect(spec).toMatchObject({
        seq: 2,
        source: 'user',
        reason: 'conversation created',
        spec: { version: 1, llm: { model } },
      });
      expect(JSON.stringify(spec)).not.toMatch(/test-key|second-profile-key|apiKeyEnv/);
      await expectAudited(system.log, { tenant: 'acme', conversation: id });
    }
    const read = (await system.api('GET', '/conversations/on-second/spec')).body as ConversationSpec;
    expect(read).toMatchObject({
      seq: 2,
      template: 'reviewer',
      reason: 'conversation created',
      spec: {
        llm: { profile: 'second', model: 'second-brain' },
        tools: ['terminal', 'finish'],
        limits: { maxIterationsPerRun: 50 },
      },
    });
  }, 120_000);

  it('switches the model mid-run: the next step goes to the new model, and the log records the switch', async () => {
    await using second = await startBrainServer({ record: true });
    await using system = await startTestSystem({
      gateway: true,
      recordModelRequests: true,
      catalog: catalogFor(second),
    });
    const ref = { tenant: 'acme', conversation: 'switching' };
    const message = taskMessage({ id: 'switching', steps: 4, effects: system.effects, latencyMs: 300 });
    expect((await system.api('POST', '/conversations', { id: 'switching', message, run: true })).status).toBe(201);
    // once the first command has run, switch
    await expect
      .poll(async () => (await system.events(ref)).filter((event) => event.type === 'observation').length, {
        timeout: 30_000,
        interval: 50,
      })
      .toBeGreaterThanOrEqual(1);
    const switched = await system.api('PATCH', '/conversations/switching/spec', {
      spec: { llm: { profile: 'second', temperature: 0.1 } },
      reason: 'model switched by the user',
    });
    expect(switched.status, switched.text).toBe(200);
    expect(switched.body).toMatchObject({
      reason: 'model switched by the user',
      spec: { llm: { profile: 'second', model: 'second-brain', temperature: 0.1 } },
    });
    await system.waitForStatus([ref], AT_REST, 60_000);
    expect(await system.status(ref)).toBe('finished');

    // the rest of the run went to the second model, with the spec's tuning (a call the first model
    // was already answering when the spec changed is discarded: its step's append conflicts)
    expect(requestsOf(system.brain, 'switching').length).toBeGreaterThanOrEqual(1);
    expect(bodiesOf(second, 'switching').length).toBeGreaterThanOrEqual(1);
    expect(
      bodiesOf(second, 'switching').every((body) => body.model === 'second-brain' && body.temperature === 0.1),
    ).toBe(true);
    const events = await system.events(ref);
    const specs = specEvents(events);
    expect(specs.map((event) => [event.reason, (event.spec['llm'] as { model: string }).model])).toEqual([
      ['conversation created', 'brain'],
      ['model switched by the user', 'second-brain'],
    ]);
    // the switch sits between the steps of the two models: every usage after it names the second model
    const switchSeq = specs[1]!.seq;
    const usages = events.filter((event) => event.type === 'llm_usage' && event.purpose === 'step');
    expect(
      usages
        .filter((usage) => usage.seq > switchSeq)
        .every((usage) => usage.type === 'llm_usage' && usage.model === 'second-brain'),
    ).toBe(true);
    expect(usages.some((usage) => usage.seq < switchSeq && usage.type === 'llm_usage' && usage.model === 'brain')).toBe(
      true,
    );
    await expectAudited(system.log, { tenant: 'acme', conversation: 'switching' });
  }, 120_000);

  it("takes a model's key from a secret: the model gets it, the sandbox does not, and it appears in no event, frame, log, snapshot or stored file", async () => {
    await using own = await startBrainServer({ record: true });
    const key = generateSecretsKey();
    await using system = await startTestSystem({
      gateway: true,
      captureLogs: true,
      env: { FLOTILLA_LOG_LEVEL: 'debug', FLOTILLA_SECRETS_KEY: key },
      catalog: catalogFor(own),
    });
    const value = `sk-own-${randomBytes(12).toString('hex')}`;
    const spec = {
      llm: {
        provider: 'openai-chat',
        model: 'own-model',
        baseURL: own.baseURL,
        apiKeySecret: 'OWN_MODEL_KEY',
        retry: RETRY,
      },
      tools: ['terminal', 'think', 'finish'],
    };
    const created = await system.api('POST', '/conversations', { id: 'own-key', spec });
    expect(created.status, created.text).toBe(201);
    expect((await system.api('PUT', '/conversations/own-key/secrets/OWN_MODEL_KEY', { value })).status).toBe(204);
    const frames: string[] = [];
    const socket = new WebSocket(`${system.gatewayUrl.replace(/^http/, 'ws')}/v1/conversations/own-key/events`);
    socket.on('message', (data: Buffer) => frames.push(data.toString('utf8')));
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    socket.send(JSON.stringify({ type: 'auth', api_key: system.apiKey }));
    const ref = { tenant: 'acme', conversation: 'own-key' };
    // the agent's commands get the conversation's secrets, but not its model's key
    expect(
      (await system.api('PUT', '/conversations/own-key/secrets/OTHER_TOKEN', { value: 'other-token-value' })).status,
    ).toBe(204);
    const commands = ['echo "key=${OWN_MODEL_KEY:-absent} other=${OTHER_TOKEN:-absent}"'];
    expect(
      (
        await system.api('POST', '/conversations/own-key/messages', {
          text: taskMessage({ id: 'own-key', steps: 1, effects: system.effects, commands }),
          run: true,
        })
      ).status,
    ).toBe(202);
    await system.waitForStatus([ref], AT_REST, 60_000);
    expect(await system.status(ref)).toBe('finished');
    await new Promise((resolve) => setTimeout(resolve, 300));
    socket.close();

    // the model was called with the secret as its key, and only this conversation's requests went there
    expect(own.authorizations.length).toBeGreaterThanOrEqual(2);
    expect(own.authorizations.every((header) => header === `Bearer ${value}`)).toBe(true);
    expect(requestsOf(own, 'own-key').every((request) => request.model === 'own-model')).toBe(true);
    const observation = (await system.events(ref)).find((event) => event.type === 'observation');
    expect(JSON.stringify(observation)).toContain('key=absent other=<secret:OTHER_TOKEN>');

    const found: string[] = [];
    const look = (where: string, text: string) => {
      if (text.includes(value)) found.push(where);
    };
    look('an event', JSON.stringify(await system.events(ref)));
    look('a WebSocket frame', frames.join('\n'));
    look('a service log line', system.logLines.join('\n'));
    look('the spec as read', (await system.api('GET', '/conversations/own-key/spec')).text);
    look('the conversation', (await system.api('GET', '/conversations/own-key')).text);
    for (const file of await listFiles(join(system.home, 'nats')))
      look(file, (await readFile(file)).toString('latin1'));
    expect(found).toEqual([]);
    expect(frames.length).toBeGreaterThan(0);
    expect(system.logLines.length).toBeGreaterThan(0);
    await expectAudited(system.log, { tenant: 'acme', conversation: 'own-key' });

    // without the secret, the run ends saying which key is missing, instead of calling with none
    expect(
      (
        await system.api('POST', '/conversations', {
          id: 'no-key',
          spec,
          message: taskMessage({ id: 'no-key', steps: 1, effects: system.effects }),
          run: true,
        })
      ).status,
    ).toBe(201);
    const missing = { tenant: 'acme', conversation: 'no-key' };
    await system.waitForStatus([missing], AT_REST, 60_000);
    expect(await system.status(missing)).toBe('error');
    expect((await system.events(missing)).find((event) => event.type === 'conversation_error')).toMatchObject({
      code: 'llm_invalid_config',
      detail: "the model's key is the secret OWN_MODEL_KEY, which is not set for this conversation or its tenant",
    });
    expect(requestsOf(own, 'no-key')).toEqual([]);
  }, 120_000);

  it('refuses a spec outside the operator limits with a 4xx naming the field, and appends nothing', async () => {
    await using second = await startBrainServer();
    await using system = await startTestSystem({
      gateway: true,
      stepWorkers: 0,
      toolRunners: 0,
      catalog: catalogFor(second),
    });
    const refusals: [unknown, number, string, string][] = [
      [
        { spec: { llm: { provider: 'openai-chat', model: 'x', baseURL: 'http://169.254.169.254/v1' } } },
        403,
        'spec_not_allowed',
        'body.spec.llm.baseURL',
      ],
      [
        { spec: { llm: { profile: 'second', baseURL: 'http://127.0.0.1:9/v1' } } },
        400,
        'validation_failed',
        'body.spec.llm.baseURL',
      ],
      [{ spec: { llm: { profile: 'nope' } } }, 400, 'validation_failed', 'body.spec.llm.profile'],
      [{ spec: { tools: ['terminal', 'rm_rf'] } }, 403, 'spec_not_allowed', 'body.spec.tools'],
      [
        { spec: { limits: { maxIterationsPerRun: 10_000 } } },
        403,
        'spec_not_allowed',
        'body.spec.limits.maxIterationsPerRun',
      ],
      [{ spec: { confirmation: { mode: 'sometimes' } } }, 400, 'validation_failed', 'body.spec.confirmation.mode'],
      [{ spec: { model: 'gpt' } }, 400, 'validation_failed', 'body.spec.model'],
      [{ template: 'unknown' }, 400, 'validation_failed', 'body.template'],
    ];
    for (const [index, [body, status, code, path]] of refusals.entries()) {
      const answer = await system.api('POST', '/conversations', { id: `refused-${index}`, ...(body as object) });
      expect(answer.status, `${JSON.stringify(body)} → ${answer.text}`).toBe(status);
      const error = (answer.body as ErrorBody).error;
      expect(error.code).toBe(code);
      expect(
        error.issues?.map((issue) => issue.path),
        answer.text,
      ).toContain(path);
      expect((await system.api('GET', `/conversations/refused-${index}`)).status).toBe(404);
    }
    // a change is checked the same way, and leaves the spec as it was
    expect((await system.api('POST', '/conversations', { id: 'kept' })).status).toBe(201);
    const refused = await system.api('PATCH', '/conversations/kept/spec', { spec: { tools: ['rm_rf'] } });
    expect(refused.status).toBe(403);
    expect(((await system.api('GET', '/conversations/kept/spec')).body as ConversationSpec).seq).toBe(2);
  }, 90_000);
});

async function listFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}
