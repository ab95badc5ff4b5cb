// Flotilla as an A2A agent, driven by the official @a2a-js/sdk client (A2A v1.0) and by plain
// JSON-RPC (v0.3's method names) against the whole system: each task is a conversation of the
// caller's tenant, run by the step workers and tool runners with the brain as the model.
import { Role, TaskState, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { ACME_KEY, startGatewayHarness } from '@flotilla/gateway/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskMessage } from '../support/brain-task.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

/** A fetch that sends `key` as the bearer token, as an A2A client configured with credentials does. */
const withKey =
  (key: string): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };

const textOf = (message: Message | undefined): string =>
  (message?.parts ?? []).map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');

function userMessage(text: string, taskId = ''): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const send = (
  message: Message,
  options: { returnImmediately?: boolean; historyLength?: number; metadata?: Record<string, unknown> } = {},
) => ({
  tenant: '',
  message,
  configuration: {
    acceptedOutputModes: [],
    taskPushNotificationConfig: undefined,
    historyLength: options.historyLength,
    returnImmediately: options.returnImmediately ?? false,
  },
  metadata: options.metadata,
});

function asTask(result: Message | Task): Task {
  if (!('status' in result)) throw new Error(`a message, not a task: ${JSON.stringify(result)}`);
  return result;
}

describe('the A2A endpoint', () => {
  let system: RunningTestSystem;
  let acme: Client;
  let globex: Client;
  const task = (id: string, extra: { steps?: number; latencyMs?: number } = {}) =>
    taskMessage({ id, steps: extra.steps ?? 1, effects: system.effects, ...extra });
  const clientFor = (key: string): Promise<Client> =>
    new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl: withKey(key) })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: withKey(key) }),
    }).createFromUrl(system.gatewayUrl);
  /** A plain JSON-RPC call to /a2a as `key` (acme's by default): its HTTP status and body. */
  const rpc = async (
    body: unknown,
    headers: Record<string, string> = {},
    key = system.apiKey,
  ): Promise<{ status: number; body: { result?: unknown; error?: { code: number; message: string } } }> => {
    const response = await fetch(`${system.gatewayUrl}/a2a`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as never };
  };

  beforeAll(async () => {
    system = await startTestSystem({
      gateway: true,
      gatewayEnv: { FLOTILLA_GATEWAY_AGENT_ENDPOINTS: 'a2a', FLOTILLA_GATEWAY_WEB_UI: 'false' },
      catalog: { templates: { careful: { confirmation: { mode: 'always' } } } },
    });
    [acme, globex] = await Promise.all([clientFor(system.apiKey), clientFor(system.otherApiKey)]);
  }, 120_000);
  afterAll(async () => {
    await system?.[Symbol.asyncDispose]();
  });

  it('serves its card: the JSON-RPC URL as reached, streaming, bearer auth required, the templates as skills', async () => {
    const card = await new DefaultAgentCardResolver().resolve(system.gatewayUrl);
    expect(card.name).toBe('Flotilla');
    expect(card.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(card.supportedInterfaces.map((face) => [face.url, face.protocolBinding, face.protocolVersion])).toEqual([
      [`${system.gatewayUrl}/a2a`, 'JSONRPC', '1.0'],
      [`${system.gatewayUrl}/a2a`, 'JSONRPC', '0.3'],
    ]);
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.securitySchemes['bearer']?.scheme).toMatchObject({
      $case: 'httpAuthSecurityScheme',
      value: { scheme: 'Bearer' },
    });
    expect(card.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
    expect(card.defaultInputModes).toEqual(['text/plain']);
    expect(card.defaultOutputModes).toEqual(['text/plain']);
    expect(card.skills.map((skill) => skill.id)).toEqual(['careful']);
    expect(card.skills[0]!.description).toContain('template "careful"');

    // a v0.3 client (no A2A-Version) gets v0.3's card: its url, its typed scheme, security required
    const legacy = (await (await fetch(`${system.gatewayUrl}/.well-known/agent-card.json`)).json()) as Record<
      string,
      unknown
    >;
    expect(legacy).toMatchObject({
      protocolVersion: '0.3.0',
      url: `${system.gatewayUrl}/a2a`,
      capabilities: { streaming: true },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      security: [{ bearer: [] }],
      defaultInputModes: ['text/plain'],
      skills: [expect.objectContaining({ id: 'careful' })],
    });
    // and the SDK's v0.3 reader takes it
    const read = new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }).normalizeAgentCard(legacy);
    expect(read.supportedInterfaces[0]).toMatchObject({ url: `${system.gatewayUrl}/a2a`, protocolBinding: 'JSONRPC' });
  });

  it('message/send: a new task is a new conversation, answered when its run rests; tasks/get reads it back', async () => {
    const sent = asTask(await acme.sendMessage(send(userMessage(task('a2a-send')))));
    expect(sent.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(sent.contextId).toBe(sent.id);
    expect(textOf(sent.status?.message)).toBe('Done: 1 steps for a2a-send.');
    expect(sent.artifacts.map((artifact) => textOf({ parts: artifact.parts } as Message))).toEqual([
      'Done: 1 steps for a2a-send.',
    ]);
    expect(sent.history.map((message) => [message.role, textOf(message)])).toEqual([
      [Role.ROLE_USER, task('a2a-send')],
      [Role.ROLE_AGENT, 'Done: 1 steps for a2a-send.'],
    ]);
    // the task is the tenant's conversation
    const conversation = await system.api('GET', `/conversations/${sent.id}`);
    expect(conversation.body).toMatchObject({ id: sent.id, status: 'finished' });

    const read = await acme.getTask({ tenant: '', id: sent.id, historyLength: 1 });
    expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(read.history.map(textOf)).toEqual(['Done: 1 steps for a2a-send.']);
    expect(read.artifacts).toHaveLength(1);

    // a message with the task's id goes on with the same conversation (the brain answers its first task again)
    const next = asTask(await acme.sendMessage(send(userMessage('and once more', sent.id))));
    expect(next.id).toBe(sent.id);
    expect(next.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(next.history.map((message) => [message.role, textOf(message)])).toEqual([
      [Role.ROLE_USER, task('a2a-send')],
      [Role.ROLE_AGENT, 'Done: 1 steps for a2a-send.'],
      [Role.ROLE_USER, 'and once more'],
      [Role.ROLE_AGENT, 'Done: 1 steps for a2a-send.'],
    ]);
    // its answer is the new turn's
    expect(next.artifacts).toHaveLength(1);
    expect(next.artifacts[0]!.artifactId).not.toBe(sent.artifacts[0]!.artifactId);
  }, 60_000);

  it('message/stream: the task, working, its answer, then completed', async () => {
    const events: StreamResponse[] = [];
    for await (const event of acme.sendMessageStream(send(userMessage(task('a2a-stream'))))) events.push(event);
    const payloads = events.map((event) => event.payload!);
    expect(payloads[0]?.$case).toBe('task');
    const states = payloads.flatMap((payload) =>
      payload.$case === 'statusUpdate' ? [payload.value.status!.state] : [],
    );
    expect(states[0]).toBe(TaskState.TASK_STATE_WORKING);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(payloads.at(-1)?.$case).toBe('statusUpdate');
    const artifact = payloads.find((payload) => payload.$case === 'artifactUpdate');
    expect(artifact?.$case === 'artifactUpdate' && textOf(artifact.value.artifact as never)).toBe(
      'Done: 1 steps for a2a-stream.',
    );
  }, 60_000);

  it('v0.3 names over plain JSON-RPC: message/stream ends with completed and final: true; message/send and tasks/get', async () => {
    const response = await fetch(`${system.gatewayUrl}/a2a`, {
      method: 'POST',
      headers: { authorization: `Bearer ${system.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'stream-1',
        method: 'message/stream',
        params: {
          message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: task('a2a-v03') }] },
        },
      }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const results = (await response.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map(
        (line) =>
          JSON.parse(line.slice(6)) as {
            id: string;
            result: { kind: string; id?: string; status?: { state: string } };
          },
      );
    expect(results.every((event) => event.id === 'stream-1')).toBe(true);
    const kinds = results.map(({ result }) => `${result.kind}${result.status ? `:${result.status.state}` : ''}`);
    expect(kinds[0]).toMatch(/^task:/);
    expect(kinds.slice(1)).toEqual(['status-update:working', 'artifact-update', 'status-update:completed']);
    expect(results.at(-1)!.result).toMatchObject({ final: true });
    const id = results[0]!.result.id!;

    const sent = await rpc({
      jsonrpc: '2.0',
      id: 7,
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: 'm2',
          role: 'user',
          taskId: id,
          parts: [{ kind: 'text', text: 'and again' }],
        },
        configuration: { blocking: true },
      },
    });
    expect(sent.body.result).toMatchObject({ kind: 'task', id, status: { state: 'completed' } });
    const read = await rpc({ jsonrpc: '2.0', id: 8, method: 'tasks/get', params: { id, historyLength: 0 } });
    expect(read.body.result).toMatchObject({
      id,
      status: { state: 'completed', message: { parts: [{ kind: 'text', text: 'Done: 1 steps for a2a-v03.' }] } },
    });
    expect(read.body.result).not.toHaveProperty('history');
    const turns = await rpc({ jsonrpc: '2.0', id: 9, method: 'tasks/get', params: { id, historyLength: 2 } });
    expect(turns.body.result).toMatchObject({
      history: [
        { role: 'user', parts: [{ kind: 'text', text: 'and again' }] },
        { role: 'agent', parts: [{ kind: 'text', text: 'Done: 1 steps for a2a-v03.' }] },
      ],
    });
  }, 60_000);

  it('tasks/cancel interrupts a working task: it is canceled (the conversation paused); an ended task is not cancelable', async () => {
    const started = asTask(
      await acme.sendMessage(
        send(userMessage(task('a2a-cancel', { steps: 3, latencyMs: 3_000 })), { returnImmediately: true }),
      ),
    );
    expect(started.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    const canceled = await acme.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(await system.status({ tenant: 'acme', conversation: started.id })).toBe('paused');
    const log = await system.events({ tenant: 'acme', conversation: started.id });
    expect(log.some((event) => event.type === 'interrupt')).toBe(true);
    // again: still canceled
    expect((await acme.cancelTask({ tenant: '', id: started.id, metadata: undefined })).status?.state).toBe(
      TaskState.TASK_STATE_CANCELED,
    );
    expect((await acme.getTask({ tenant: '', id: started.id })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);

    const done = asTask(await acme.sendMessage(send(userMessage(task('a2a-done')))));
    const refused = await acme
      .cancelTask({ tenant: '', id: done.id, metadata: undefined })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TaskNotCancelableError);
  }, 60_000);

  it('SubscribeToTask follows a task under way to its end', async () => {
    const started = asTask(
      await acme.sendMessage(send(userMessage(task('a2a-follow', { latencyMs: 1_500 })), { returnImmediately: true })),
    );
    const states: TaskState[] = [];
    for await (const event of acme.resubscribeTask({ tenant: '', id: started.id })) {
      if (event.payload?.$case === 'task') states.push(event.payload.value.status!.state);
      if (event.payload?.$case === 'statusUpdate') states.push(event.payload.value.status!.state);
    }
    expect(states[0]).toBe(TaskState.TASK_STATE_WORKING);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  }, 60_000);

  it("a template's task waits for approval (input-required); the reply approve runs it to the end", async () => {
    const waiting = asTask(
      await acme.sendMessage(send(userMessage(task('a2a-careful')), { metadata: { template: 'careful' } })),
    );
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(textOf(waiting.status?.message)).toMatch(/waits for approval to run: terminal .*Reply "approve"/);
    const done = asTask(await acme.sendMessage(send(userMessage('approve', waiting.id))));
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(done.status?.message)).toBe('Done: 1 steps for a2a-careful.');
  }, 60_000);

  it("another tenant's key finds no task of acme's; a bad key or none is 401", async () => {
    const mine = asTask(await acme.sendMessage(send(userMessage(task('a2a-mine')))));
    for (const attempt of [
      () => globex.getTask({ tenant: '', id: mine.id }),
      () => globex.cancelTask({ tenant: '', id: mine.id, metadata: undefined }),
      () => globex.sendMessage(send(userMessage('hello from globex', mine.id))),
    ])
      expect(await attempt().catch((error: unknown) => error)).toBeInstanceOf(TaskNotFoundError);
    const log = await system.events({ tenant: 'acme', conversation: mine.id });
    expect(JSON.stringify(log)).not.toContain('hello from globex');

    const getTask = { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: mine.id } };
    const badKey = await rpc(getTask, {}, 'not-a-key-of-anyone-0123456789');
    expect(badKey.status).toBe(401);
    expect(badKey.body).toMatchObject({ error: { code: 'unauthorized' } });
    const noKey = await fetch(`${system.gatewayUrl}/a2a`, { method: 'POST', body: JSON.stringify(getTask) });
    expect(noKey.status).toBe(401);
    const client = await clientFor('not-a-key-of-anyone-0123456789');
    await expect(client.getTask({ tenant: '', id: mine.id })).rejects.toThrow(/401/);
  }, 60_000);

  it("answers JSON-RPC's and A2A's error codes", async () => {
    const message = (parts: unknown[]) => ({ kind: 'message', messageId: 'm', role: 'user', parts });
    const hello = [{ kind: 'text', text: 'hello' }];
    const cases: [body: unknown, headers: Record<string, string>, code: number][] = [
      ['{not json', {}, -32_700],
      [{ jsonrpc: '1.0', id: 1, method: 'tasks/get' }, {}, -32_600],
      [[{ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }], {}, -32_600],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/nothing', params: {} }, {}, -32_601],
      [{ jsonrpc: '2.0', id: 1, method: 'NoSuchMethod', params: {} }, { 'A2A-Version': '1.0' }, -32_601],
      [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: message([]) } }, {}, -32_602],
      [
        { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { ...message(hello), role: 'agent' } } },
        {},
        -32_602,
      ],
      [
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: { message: message(hello), metadata: { template: 'nope' } },
        },
        {},
        -32_602,
      ],
      [
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: {
            message: message([{ kind: 'file', file: { uri: 'https://example.com/a.png', mimeType: 'image/png' } }]),
          },
        },
        {},
        -32_005,
      ],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'no-such-task' } }, {}, -32_001],
      [{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'no such id!' } }, {}, -32_001],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }, { 'A2A-Version': '9.9' }, -32_009],
    ];
    for (const [body, headers, code] of cases) {
      const answer = await rpc(body, headers);
      expect([answer.status, answer.body.error?.code], JSON.stringify(body)).toEqual([200, code]);
      expect(answer.body.error?.message).toBeTruthy();
    }
  });

  it('is not served unless the operator turns it on', async () => {
    await using harness = await startGatewayHarness();
    const card = await fetch(`${harness.url}/.well-known/agent-card.json`);
    expect(card.status).toBe(404);
    const call = await fetch(`${harness.url}/a2a`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ACME_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }),
    });
    expect(call.status).toBe(404);
    expect(await call.json()).toMatchObject({ error: { code: 'route_not_found' } });
  }, 60_000);
});
