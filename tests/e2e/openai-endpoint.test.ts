import { FlotillaClient } from '@flotilla/client';
import type { Event } from '@flotilla/events';
import { ACME_KEY, startGatewayHarness } from '@flotilla/gateway/testing';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAudited } from '../support/audited.js';
import { taskMessage, type BrainTask } from '../support/brain-task.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

const CONVERSATION_HEADER = 'x-flotilla-conversation';

/** What an OpenAI SDK call threw (or a failure when it did not). */
async function thrown(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, 'the call should have failed').toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

/** Flotilla as an OpenAI-compatible model, driven with OpenAI's official SDK against every service. */
describe('Flotilla as an OpenAI-compatible model (/v1/chat/completions)', () => {
  let system: RunningTestSystem;
  let openai: OpenAI;
  let acme: FlotillaClient;
  let globex: FlotillaClient;
  const task = (id: string, extra: Partial<BrainTask> = {}): string =>
    taskMessage({ id, steps: 1, effects: system.effects, ...extra });
  const events = (conversation: string): Promise<Event[]> => system.events({ tenant: 'acme', conversation });
  const userTexts = async (conversation: string): Promise<string[]> =>
    (await events(conversation)).flatMap((event) =>
      event.type === 'message' && event.role === 'user'
        ? [event.content.map((part) => (part.type === 'text' ? part.text : '')).join('')]
        : [],
    );
  let plainConversation = '';

  beforeAll(async () => {
    system = await startTestSystem({
      gateway: true,
      gatewayEnv: { FLOTILLA_GATEWAY_AGENT_ENDPOINTS: 'openai', FLOTILLA_GATEWAY_WEB_UI: 'false' },
      catalog: {
        templates: {
          // no generated title: the conversation's usage is its steps' alone
          coder: { tools: ['terminal', 'finish'], titles: { generate: false } },
          careful: { tools: ['terminal', 'finish'], confirmation: { mode: 'always' }, titles: { generate: false } },
        },
      },
    });
    openai = new OpenAI({ baseURL: `${system.gatewayUrl}/v1`, apiKey: system.apiKey, maxRetries: 0 });
    acme = new FlotillaClient({ baseUrl: system.gatewayUrl, apiKey: system.apiKey });
    globex = new FlotillaClient({ baseUrl: system.gatewayUrl, apiKey: system.otherApiKey });
  }, 120_000);
  afterAll(async () => {
    await system?.[Symbol.asyncDispose]();
  });

  it("lists the operator's templates and profiles as models", async () => {
    const models = [];
    for await (const model of openai.models.list()) models.push(model);
    expect(models).toEqual([
      { id: 'careful', object: 'model', created: 0, owned_by: 'flotilla-template' },
      { id: 'coder', object: 'model', created: 0, owned_by: 'flotilla-template' },
      { id: 'default', object: 'model', created: 0, owned_by: 'flotilla-profile' },
    ]);
    expect(await openai.models.retrieve('profile:default')).toMatchObject({
      id: 'profile:default',
      owned_by: 'flotilla-profile',
    });
    const missing = await thrown(openai.models.retrieve('gpt-4o'));
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.code).toBe('model_not_found');
  });

  it('answers a completion with an agent run that used its tools, in a new conversation of the tenant', async () => {
    const { data: completion, response } = await openai.chat.completions
      .create({ model: 'coder', messages: [{ role: 'user', content: task('oa-plain') }], temperature: 0.3 })
      .withResponse();
    expect(completion.choices).toEqual([
      {
        index: 0,
        message: { role: 'assistant', content: 'Done: 1 steps for oa-plain.', refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ]);
    plainConversation = response.headers.get(CONVERSATION_HEADER)!;
    expect(completion.id).toBe(`chatcmpl-${plainConversation}`);
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('coder');

    // a conversation of acme's, on the template, whose agent ran the terminal in its sandbox
    const conversation = await acme.getConversation(plainConversation);
    expect(conversation).toMatchObject({ status: 'finished', agent: { template: 'coder' } });
    const log = await events(plainConversation);
    expect(log.filter((event) => event.type === 'action').map((event) => event.tool_name)).toEqual(['terminal']);
    expect(log.some((event) => event.type === 'observation' && !event.is_error)).toBe(true);
    expect(await system.readEffects()).toContain('oa-plain 0 0');
    // the brain's two calls: 100 + 120 prompt tokens, 20 + 20 completion tokens
    expect(completion.usage).toEqual({
      prompt_tokens: 220,
      completion_tokens: 40,
      total_tokens: 260,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    });
    expect(conversation.usage).toMatchObject({ prompt_tokens: 220, completion_tokens: 40 });
    // it is not globex's
    expect(await globex.getConversation(plainConversation).catch((error: unknown) => error)).toMatchObject({
      status: 404,
      code: 'conversation_not_found',
    });
    await expectAudited(system.log, { tenant: 'acme', conversation: plainConversation });
  }, 90_000);

  it('streams the answer as OpenAI does: the role first, the text, the finish, the usage', async () => {
    const { data: stream, response } = await openai.chat.completions
      .create({
        model: 'coder',
        messages: [{ role: 'user', content: task('oa-stream') }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    const conversation = response.headers.get(CONVERSATION_HEADER)!;
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    for (const chunk of chunks) {
      expect(chunk).toMatchObject({ id: `chatcmpl-${conversation}`, object: 'chat.completion.chunk', model: 'coder' });
    }
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    const withChoices = chunks.filter((chunk) => chunk.choices.length > 0);
    expect(withChoices.map((chunk) => chunk.choices[0]!.delta.content ?? '').join('')).toBe(
      'Done: 1 steps for oa-stream.',
    );
    expect(withChoices.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    expect(withChoices.slice(0, -1).every((chunk) => chunk.choices[0]!.finish_reason === null)).toBe(true);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 220, completion_tokens: 40 } });
    expect(withChoices.every((chunk) => chunk.usage === null)).toBe(true);
    expect(await system.readEffects()).toContain('oa-stream 0 0');
    expect((await acme.getConversation(conversation)).status).toBe('finished');
  }, 90_000);

  it("streams the final answer's text as the model wrote it, without the text of steps before their tool calls", async () => {
    // the brain writes four '.' pieces 60 ms apart before each reply: the tool call's and the answer's
    const stream = await openai.chat.completions.create({
      model: 'coder',
      messages: [{ role: 'user', content: task('oa-pieces', { chunks: 4, chunkDelayMs: 60 }) }],
      stream: true,
    });
    const contents: string[] = [];
    let id = '';
    for await (const chunk of stream) {
      id = chunk.id;
      const content = chunk.choices[0]?.delta.content;
      if (content) contents.push(content);
    }
    const conversation = id.replace(/^chatcmpl-/, '');
    const answer = (await acme.finalResponse(conversation)).text;
    expect(answer).toBe('....Done: 1 steps for oa-pieces.');
    expect(contents.join('')).toBe(answer);
    // the model's own pieces, not the answer in one
    expect(contents.length).toBeGreaterThan(1);
    // and the non-streamed answer of the same task is the same text
    const completion = await openai.chat.completions.create({
      model: 'coder',
      messages: [{ role: 'user', content: task('oa-pieces-whole', { chunks: 4, chunkDelayMs: 60 }) }],
    });
    expect(completion.choices[0]!.message.content).toBe('....Done: 1 steps for oa-pieces-whole.');
  }, 90_000);

  it('lets the run go on when the caller leaves a stream', async () => {
    const { data: stream, response } = await openai.chat.completions
      .create({
        model: 'coder',
        messages: [{ role: 'user', content: task('oa-left', { latencyMs: 1_500 }) }],
        stream: true,
      })
      .withResponse();
    const conversation = response.headers.get(CONVERSATION_HEADER)!;
    for await (const chunk of stream) {
      expect(chunk.choices[0]!.delta.role).toBe('assistant');
      break; // leaving the loop aborts the request
    }
    expect((await acme.getConversation(conversation)).status).toBe('running');
    await system.waitForStatus([{ tenant: 'acme', conversation }], ['finished', 'error', 'stuck'], 60_000);
    expect(await acme.getConversation(conversation)).toMatchObject({ status: 'finished' });
    expect((await acme.finalResponse(conversation)).text).toBe('Done: 1 steps for oa-left.');
  }, 90_000);

  it('carries the earlier turns into a new conversation as a transcript, on a profile', async () => {
    const completion = await openai.chat.completions.create({
      model: 'default',
      messages: [
        { role: 'system', content: 'Answer in one line.' },
        { role: 'user', content: 'What is this repository?' },
        { role: 'assistant', content: 'A sandbox for tasks.' },
        { role: 'user', content: [{ type: 'text', text: task('oa-transcript') }] },
      ],
    });
    expect(completion.choices[0]!.message.content).toBe('Done: 1 steps for oa-transcript.');
    const conversation = completion.id.replace(/^chatcmpl-/, '');
    const [first, ...others] = await userTexts(conversation);
    expect(others).toEqual([]);
    expect(first).toBe(
      [
        'Earlier turns of this chat, oldest first, each between <turn> tags:',
        '',
        '<turn role="system">\nAnswer in one line.\n</turn>',
        '<turn role="user">\nWhat is this repository?\n</turn>',
        '<turn role="assistant">\nA sandbox for tasks.\n</turn>',
        '',
        "The user's new message, to answer now:",
        '',
        task('oa-transcript'),
      ].join('\n'),
    );
    expect((await acme.getConversation(conversation)).agent).toMatchObject({ template: null });
  }, 90_000);

  it('goes on with a conversation named by x-flotilla-conversation, sending the last user message alone', async () => {
    expect(plainConversation).not.toBe('');
    const goOn = { headers: { [CONVERSATION_HEADER]: plainConversation } };
    const messages = [
      { role: 'user' as const, content: task('oa-plain') },
      { role: 'assistant' as const, content: 'Done: 1 steps for oa-plain.' },
      { role: 'user' as const, content: 'And now?' },
    ];
    const { data: completion, response } = await openai.chat.completions
      .create({ model: 'coder', messages }, goOn)
      .withResponse();
    expect(response.headers.get(CONVERSATION_HEADER)).toBe(plainConversation);
    expect(completion.id).toBe(`chatcmpl-${plainConversation}`);
    // the task is done already: the brain answers at once, one call of 120 + 20 tokens
    expect(completion.choices[0]!.message.content).toBe('Done: 1 steps for oa-plain.');
    expect(completion.usage).toMatchObject({ prompt_tokens: 120, completion_tokens: 20, total_tokens: 140 });
    expect(await userTexts(plainConversation)).toEqual([task('oa-plain'), 'And now?']);

    // globex's key cannot go on with acme's conversation
    const foreign = new OpenAI({ baseURL: `${system.gatewayUrl}/v1`, apiKey: system.otherApiKey, maxRetries: 0 });
    const refused = await thrown(foreign.chat.completions.create({ model: 'coder', messages }, goOn));
    expect(refused).toBeInstanceOf(OpenAI.NotFoundError);
    expect(refused.code).toBe('conversation_not_found');
    expect(await userTexts(plainConversation)).toHaveLength(2);
    // nor a conversation id that cannot be one
    const bad = await thrown(
      openai.chat.completions.create({ model: 'coder', messages }, { headers: { [CONVERSATION_HEADER]: 'a b' } }),
    );
    expect(bad).toMatchObject({ status: 400, param: CONVERSATION_HEADER });
  }, 90_000);

  it('answers a run left waiting for a confirmation with 409 naming the conversation, not to be retried', async () => {
    const error = await thrown(
      openai.chat.completions.create({ model: 'careful', messages: [{ role: 'user', content: task('oa-careful') }] }),
    );
    expect(error).toBeInstanceOf(OpenAI.ConflictError);
    expect(error.code).toBe('confirmation_required');
    expect(error.type).toBe('conflict_error');
    const conversation = error.headers?.get(CONVERSATION_HEADER) ?? '';
    expect(conversation).not.toBe('');
    expect(error.message).toContain(`conversation "${conversation}"`);
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect((await acme.getConversation(conversation)).status).toBe('waiting_for_confirmation');
    // going on with it is refused before anything is sent: the message would not start a run
    const goOn = await thrown(
      openai.chat.completions.create(
        { model: 'careful', messages: [{ role: 'user', content: 'Go ahead.' }] },
        { headers: { [CONVERSATION_HEADER]: conversation } },
      ),
    );
    expect(goOn).toMatchObject({ status: 409, code: 'confirmation_required' });
    expect(await userTexts(conversation)).toEqual([task('oa-careful')]);
  }, 90_000);

  it('refuses a bad key (401) and bad bodies (400, 404) in the shape the SDK reads', async () => {
    const conversationsBefore = await acme.countConversations();
    const stranger = new OpenAI({ baseURL: `${system.gatewayUrl}/v1`, apiKey: 'not-a-key-0123456789', maxRetries: 0 });
    const unauthorized = await thrown(
      stranger.chat.completions.create({ model: 'coder', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(unauthorized).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(unauthorized).toMatchObject({
      status: 401,
      type: 'authentication_error',
      message: expect.stringMatching(/API key/),
    });
    expect(await thrown(stranger.models.list())).toBeInstanceOf(OpenAI.AuthenticationError);

    const image = await thrown(
      openai.chat.completions.create({
        model: 'coder',
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] },
        ],
      }),
    );
    expect(image).toBeInstanceOf(OpenAI.BadRequestError);
    expect(image).toMatchObject({ type: 'invalid_request_error', param: 'messages.0.content.0' });
    expect(image.message).toMatch(/"image_url" parts are not supported/);

    const tools = await thrown(
      openai.chat.completions.create({
        model: 'coder',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
      }),
    );
    expect(tools).toMatchObject({ status: 400, param: 'tools' });

    const lastNotUser = await thrown(
      openai.chat.completions.create({ model: 'coder', messages: [{ role: 'assistant', content: 'hello' }] }),
    );
    expect(lastNotUser).toBeInstanceOf(OpenAI.BadRequestError);
    expect(lastNotUser.message).toMatch(/the last message must be the user's/);

    const unknown = await thrown(
      openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown).toMatchObject({ code: 'model_not_found', param: 'model' });
    expect(unknown.message).toContain('careful, coder, default');

    const notJson = await fetch(`${system.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${system.apiKey}`, 'content-type': 'application/json' },
      body: '{"model": ',
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toEqual({
      error: {
        message: 'The body is not valid JSON.',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_json',
      },
    });
    // none of them started a conversation
    expect(await acme.countConversations()).toBe(conversationsBefore);
  }, 60_000);

  it('is not served by a gateway without the openai endpoint', async () => {
    await using harness = await startGatewayHarness();
    expect(harness.config.agentEndpoints).toEqual([]);
    const client = new OpenAI({ baseURL: `${harness.url}/v1`, apiKey: ACME_KEY, maxRetries: 0 });
    const completion = await thrown(
      client.chat.completions.create({ model: 'coder', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(completion).toBeInstanceOf(OpenAI.NotFoundError);
    expect(completion.message).toMatch(/No route POST \/v1\/chat\/completions/);
    expect(await thrown(client.models.list())).toBeInstanceOf(OpenAI.NotFoundError);
    // the same requests are served where it is on
    expect((await openai.models.list()).data.length).toBeGreaterThan(0);
  }, 60_000);
});
