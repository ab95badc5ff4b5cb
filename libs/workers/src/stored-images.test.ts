import { randomBytes } from 'node:crypto';
import { AgentCatalog, parseAgentConfig } from '@flotilla/agent';
import { draftEvent, type EventDraft } from '@flotilla/events';
import { createLanguageModel } from '@flotilla/llm';
import {
  fixtureReply,
  loadFixture,
  startTestServer,
  type FixtureName,
  type LlmTestServer,
  type TestProvider,
} from '@flotilla/llm/testing';
import { EventLog, type ConversationRef } from '@flotilla/log';
import { ConversationCache, ImageStore, InterruptRegistry, ServiceMetrics, type StoredImage } from '@flotilla/runtime';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversationAgents } from './conversation-agents.js';
import { createStepHandler } from './step-handler.js';
import { storedDelivery } from './test-support/stored-delivery.js';

// An image in a user message, stored in the images bucket and named in the log, reaches each
// provider's request in that provider's format: the step handler reads the log, the view renders
// it, the conversation's model reads the image in from a real nats-server and the provider's
// official SDK sends it to a local server speaking its wire protocol.

let nats: NatsTestServer;
let nc: NatsConnection;
let log: EventLog;
let images: ImageStore;
const tools = new ToolRegistry(createBuiltinTools());

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  const name = uniqueName('IMG');
  log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  images = await ImageStore.open(nc, { bucket: uniqueName('images') });
});

afterAll(async () => {
  await tools.close();
  await nc.close();
  await nats[Symbol.asyncDispose]();
});

const FIXTURES: Record<TestProvider, FixtureName> = {
  'openai-chat': 'openai-chat-tool-call',
  'openai-responses': 'openai-responses-tool-call',
  anthropic: 'anthropic-tool-call',
};

/** A PNG signature followed by random bytes: the store tells the format by the signature. */
function png(size: number): Uint8Array {
  const bytes = randomBytes(size);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return bytes;
}

/** One step of a conversation whose user message holds `image`: the body of the request its model was sent. */
async function stepWith(
  provider: TestProvider,
  image: StoredImage,
  options: { tenant?: string; vision?: boolean } = {},
): Promise<Record<string, unknown>> {
  await using server: LlmTestServer = await startTestServer();
  server.enqueue(fixtureReply(loadFixture(FIXTURES[provider])));
  const baseURL = provider === 'anthropic' ? server.url : server.baseURL;
  const agent = parseAgentConfig({
    llm: {
      provider,
      model: 'vision-model',
      baseURL,
      ...(options.vision === undefined ? {} : { vision: options.vision }),
    },
    tools: ['think', 'finish'],
  });
  const agents = new ConversationAgents({
    catalog: new AgentCatalog(agent),
    registry: tools,
    images,
    createModel: (config) => createLanguageModel({ ...config, apiKey: 'test-key', retry: { maxAttempts: 1 } }),
  });
  const handle = createStepHandler({
    log,
    cache: new ConversationCache(log),
    agents,
    interrupts: new InterruptRegistry(),
    nc,
    metrics: new ServiceMetrics('test'),
    streamDeltas: false,
  });
  const ref: ConversationRef = { tenant: options.tenant ?? 'acme', conversation: uniqueName('c') };
  const drafts: EventDraft[] = [
    draftEvent({ ...ref, source: 'system' }, 'state_change', { status: 'idle', reason: 'created' }),
    draftEvent({ ...ref, source: 'user' }, 'message', {
      role: 'user',
      content: [
        { type: 'text', text: 'What is on this screen?' },
        { type: 'image', ...image },
      ],
    }),
    draftEvent({ ...ref, source: 'user' }, 'state_change', { status: 'running', reason: 'message with run' }),
  ];
  const commit = await log.append(ref, drafts, { expected: await log.tail(ref) });
  // the log holds the image by reference only, in a v4 commit
  const { events } = await log.readEvents(ref);
  expect(events[1]).toMatchObject({
    v: 4,
    content: [{ type: 'text' }, { type: 'image', sha256: image.sha256, bytes: image.bytes }],
  });
  expect(JSON.stringify(events).length).toBeLessThan(2_000);
  const outcome = await handle(await storedDelivery(log, ref, commit.streamSeq));
  expect(outcome.outcome).not.toBe('retry');
  expect(server.requests.length).toBe(1);
  return server.requests[0]!.body as Record<string, unknown>;
}

describe('an image in a user message', () => {
  let image: StoredImage;
  let base64: string;

  beforeAll(async () => {
    const bytes = png(300 * 1024); // more than one chunk of the bucket
    image = await images.put('acme', bytes, { name: 'screen.png' });
    base64 = Buffer.from(bytes).toString('base64');
  });

  it('reaches OpenAI Chat Completions as an image_url content part with its data URL', async () => {
    const body = await stepWith('openai-chat', image);
    const user = (body['messages'] as { role: string; content: unknown }[]).find((message) => message.role === 'user');
    expect(user?.content).toEqual([
      { type: 'text', text: 'What is on this screen?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${base64}` } },
    ]);
  });

  it('reaches the OpenAI Responses API as an input_image', async () => {
    const body = await stepWith('openai-responses', image);
    const user = (body['input'] as { type: string; role?: string; content?: unknown }[]).find(
      (item) => item.role === 'user',
    );
    expect(user?.content).toEqual([
      { type: 'input_text', text: 'What is on this screen?' },
      { type: 'input_image', image_url: `data:image/png;base64,${base64}`, detail: 'auto' },
    ]);
  });

  it('reaches Anthropic Messages as an image block with a base64 source', async () => {
    const body = await stepWith('anthropic', image);
    const user = (body['messages'] as { role: string; content: { type: string }[] }[]).find(
      (message) => message.role === 'user',
    );
    expect(
      user?.content.map(({ cache_control: _cache, ...block }: { type: string; cache_control?: unknown }) => block),
    ).toEqual([
      { type: 'text', text: 'What is on this screen?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: base64 } },
    ]);
  });

  it('reaches a model that takes no images as a line of text saying so, on every provider path', async () => {
    const note = '[image screen.png (image/png, 300 KiB) not shown: this model does not take images]';
    const chat = await stepWith('openai-chat', image, { vision: false });
    expect(JSON.stringify(chat)).not.toContain(base64.slice(0, 64));
    expect(
      (chat['messages'] as { role: string; content: unknown }[]).find((message) => message.role === 'user')?.content,
    ).toBe(`What is on this screen?\n${note}`);
    const anthropic = await stepWith('anthropic', image, { vision: false });
    expect(JSON.stringify(anthropic)).toContain(note);
    expect(JSON.stringify(anthropic)).not.toContain('"type":"image"');
    const responses = await stepWith('openai-responses', image, { vision: false });
    expect(JSON.stringify(responses)).toContain(note);
    expect(JSON.stringify(responses)).not.toContain('input_image');
  });

  it("is never another tenant's: a log of globex naming acme's image gets a note that it is not stored", async () => {
    const body = await stepWith('openai-chat', image, { tenant: 'globex' });
    expect(JSON.stringify(body)).not.toContain(base64.slice(0, 64));
    expect(JSON.stringify(body)).toContain(
      '[image screen.png (image/png, 300 KiB) not shown: the image is no longer stored]',
    );
  });
});
