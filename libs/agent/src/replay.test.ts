import { draftEvent, parseEvent, withPositionalIds, type Event, type EventDraft } from '@flotilla/events';
import { createLanguageModel, withFallbacks } from '@flotilla/llm';
import {
  errorReply,
  fixtureReply,
  loadErrorBody,
  loadFixture,
  startTestServer,
  type FixtureName,
  type LlmTestServer,
} from '@flotilla/llm/testing';
import { defineTool, textResult, ToolRegistry } from '@flotilla/tools';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AGENT_SPEC_VERSION, AgentSpec, agentConfigOf, llmConfigOf } from './agent-spec.js';
import { withListedTools } from './mcp-tools-catalog.js';
import { checkRequests, replayRequests, ReplayError } from './replay.js';
import { SpecFold } from './spec-fold.js';
import { step } from './step.js';
import { registryCatalog } from './tool-catalog.js';

const ref = { tenant: 'acme', conversation: 'replayed' };

const readFileTool = defineTool({
  name: 'read_file',
  description: 'Read a file from the workspace',
  parameters: z.object({ path: z.string() }),
  annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
  resources: () => [],
  execute: async ({ path }) => textResult(`contents of ${path}`),
});
const registry = new ToolRegistry([readFileTool]);

/** A conversation's log in memory, appended as the log appends: positional ids, contiguous seqs, validated. */
class MemoryLog {
  readonly events: Event[] = [];

  append(drafts: readonly EventDraft[]): Event[] {
    const first = this.events.length + 1;
    const appended = withPositionalIds(drafts, first).map((draft, index) =>
      parseEvent({ ...draft, seq: first + index }),
    );
    this.events.push(...appended);
    return appended;
  }

  spec(llm: Record<string, unknown>, reason: string): void {
    const spec = AgentSpec.parse({
      version: AGENT_SPEC_VERSION,
      llm,
      tools: ['read_file'],
      prompt: { includeDate: true, context: 'Repository: flotilla.' },
    });
    this.append([draftEvent({ ...ref, source: 'user' }, 'agent_spec', { spec, reason })]);
  }

  /** One step with the spec in force, as a step worker takes it (its model made from the spec), appended. */
  async step(server: LlmTestServer, fixture: FixtureName): Promise<void> {
    const specEvent = this.events.findLast((event) => event.type === 'agent_spec');
    if (specEvent?.type !== 'agent_spec') throw new Error('no spec');
    const agent = agentConfigOf(AgentSpec.parse(specEvent.spec));
    server.enqueue(fixtureReply(loadFixture(fixture)));
    const llm = createLanguageModel({ ...agent.llm, apiKey: 'test-key', retry: { maxAttempts: 1 } });
    // a clock far from today's: the date in the prompt is the logged one, never the replay's
    const now = () => new Date('2031-02-03T04:05:06.000Z');
    // as the step worker offers them: the spec's built-in tools and what its MCP servers listed
    const tools = withListedTools(registryCatalog(registry, agent.tools), new SpecFold().append(this.events).listed());
    const result = await step({ agent, llm, tools, events: this.events, conversation: ref, now });
    expect(result.outcome).toBe('actions');
    const actions = this.append(result.drafts).filter((event) => event.type === 'action');
    this.append(
      actions.map((action) =>
        draftEvent({ ...ref, source: 'environment' }, 'observation', {
          action_id: action.id,
          tool_call_id: action.tool_call_id,
          tool_name: action.tool_name,
          content: [{ type: 'text', text: `read ${JSON.stringify(action.input)}` }],
          is_error: false,
        }),
      ),
    );
  }
}

describe('replayRequests', () => {
  it('rebuilds a step whose message held a stored image with a line naming the image in place of its bytes, which are not in the log', () => {
    const log = new MemoryLog();
    log.spec({ provider: 'anthropic', model: 'claude-sonnet-4-6' }, 'conversation created');
    const sha256 = 'c'.repeat(64);
    log.append([
      draftEvent({ ...ref, source: 'user' }, 'message', {
        role: 'user',
        content: [
          { type: 'text', text: 'Look.' },
          { type: 'image', sha256, bytes: 4096, media_type: 'image/png', name: 'a.png' },
        ],
      }),
      draftEvent({ ...ref, source: 'user' }, 'state_change', { status: 'running' }),
      draftEvent({ ...ref, source: 'system' }, 'llm_usage', {
        model: 'claude-sonnet-4-6',
        purpose: 'step',
        prompt_tokens: 1,
        completion_tokens: 1,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        latency_ms: 1,
        cost_usd: 0,
      }),
    ]);
    const [request] = replayRequests(log.events, { registry });
    expect(request!.body).toContain(
      `[image a.png (image/png, 4 KiB) not shown: stored image ${sha256}: its bytes are in the images bucket, not in the log]`,
    );
    expect(request!.body).not.toContain('"type":"image"');
  });

  it("rebuilds every step's request byte for byte from the log alone, across model switches, providers and a condensation", async () => {
    await using server = await startTestServer();
    const log = new MemoryLog();
    log.spec(
      { provider: 'openai-chat', model: 'gpt-4.1', baseURL: server.baseURL, temperature: 0.2, maxOutputTokens: 2000 },
      'conversation created',
    );
    // what an MCP server of that spec listed (as a tool runner logs it): offered beside the built-in tools
    const docsSearch = {
      name: 'docs_search',
      description: 'Search the docs',
      parameters: { type: 'object', properties: { query: { type: 'string' } } },
    };
    log.append([
      draftEvent({ ...ref, source: 'environment' }, 'mcp_tools', { spec_seq: 1, server: 'docs', tools: [docsSearch] }),
    ]);
    log.append([
      draftEvent({ ...ref, source: 'user' }, 'message', {
        role: 'user',
        content: [{ type: 'text', text: 'Compare package.json and tsconfig.json.' }],
      }),
      draftEvent({ ...ref, source: 'user' }, 'state_change', { status: 'running' }),
    ]);
    await log.step(server, 'openai-chat-tool-call');
    log.spec(
      { provider: 'anthropic', model: 'claude-sonnet-4-6', baseURL: server.url, reasoningEffort: 'low' },
      'model switched by the user',
    );
    await log.step(server, 'anthropic-tool-call');
    // the first step's batch condensed away, a summary in its place
    const switched = log.events.findLastIndex((event) => event.type === 'agent_spec');
    const forgotten = log.events
      .slice(0, switched)
      .filter((event) => event.type === 'action' || event.type === 'observation')
      .map((event) => event.id);
    expect(forgotten.length).toBe(4);
    log.append([
      draftEvent({ ...ref, source: 'system' }, 'condensation', {
        forgotten_event_ids: forgotten,
        summary: 'The agent read package.json and tsconfig.json once.',
        summary_offset: 1,
      }),
    ]);
    log.spec(
      {
        provider: 'openai-responses',
        model: 'gpt-5',
        baseURL: server.baseURL,
        reasoningEffort: 'medium',
        promptCacheKey: 'tenant-acme',
      },
      'model switched by the user',
    );
    await log.step(server, 'openai-responses-tool-call');

    const replayed = replayRequests(log.events, { registry });
    const steps = log.events.filter((event) => event.type === 'llm_usage' && event.purpose === 'step');
    expect(replayed.map((request) => request.seq)).toEqual(steps.map((event) => event.seq));
    expect(replayed.map((request) => request.provider)).toEqual(['openai-chat', 'anthropic', 'openai-responses']);
    expect(replayed.map((request) => request.body)).toEqual(server.requests.map((request) => request.text));
    // what the test leans on is really in the requests: the logged date, the summary, the switch's settings
    expect(replayed[0]!.body).toContain("Today's date is 2031-02-03 (UTC).");
    expect(replayed[0]!.body).toContain('"name":"docs_search"');
    expect(replayed[1]!.body).not.toContain('docs_search'); // the next spec's servers listed nothing
    expect(replayed[2]!.body).toContain('The agent read package.json and tsconfig.json once.');
    expect(replayed[1]!.body).toContain('call_Kx8Qe2VbN4tR7yU1iO3pA5sD');
    expect(replayed[2]!.body).not.toContain('call_Kx8Qe2VbN4tR7yU1iO3pA5sD');
    expect(replayed[1]!.body).toContain('"thinking":{"type":"enabled","budget_tokens":2048}');
    expect(
      checkRequests(
        replayed,
        server.requests.map((request) => ({ body: request.text })),
      ).map((check) => check.result),
    ).toEqual(['same', 'same', 'same']);
  });

  it("rebuilds a step a fallback made with the fallback's settings, byte for byte as the fallback received it", async () => {
    await using primary = await startTestServer();
    await using backup = await startTestServer();
    const log = new MemoryLog();
    log.spec(
      {
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        baseURL: primary.url,
        fallbacks: [
          { profile: 'backup', provider: 'openai-chat', model: 'gpt-4.1', baseURL: backup.baseURL, temperature: 0.5 },
        ],
      },
      'conversation created',
    );
    log.append([
      draftEvent({ ...ref, source: 'user' }, 'message', {
        role: 'user',
        content: [{ type: 'text', text: 'Read package.json.' }],
      }),
      draftEvent({ ...ref, source: 'user' }, 'state_change', { status: 'running' }),
    ]);
    const spec = AgentSpec.parse((log.events[0] as Extract<Event, { type: 'agent_spec' }>).spec);
    // the spec's own provider is overloaded; its fallback answers
    primary.enqueue(errorReply(529, loadErrorBody('anthropic', 'overloaded')));
    backup.enqueue(fixtureReply(loadFixture('openai-chat-tool-call')));
    const made = (config: ReturnType<typeof llmConfigOf>) =>
      createLanguageModel({ ...config, apiKey: 'test-key', retry: { maxAttempts: 1 } });
    const llm = withFallbacks({ model: made(llmConfigOf(spec.llm)) }, [
      { model: made(llmConfigOf(spec.llm.fallbacks![0]!)), profile: 'backup' },
    ]);
    const agent = agentConfigOf(spec);
    const result = await step({
      agent,
      llm,
      tools: registryCatalog(registry, agent.tools),
      events: log.events,
      conversation: ref,
      now: () => new Date('2031-02-03T04:05:06.000Z'),
    });
    expect(result.outcome).toBe('actions');
    log.append(result.drafts);
    const usage = log.events.find((event) => event.type === 'llm_usage')!;
    expect(usage).toMatchObject({
      v: 5,
      fallback: { index: 0, provider: 'openai-chat', model: 'gpt-4.1', profile: 'backup' },
    });

    const [replayed] = replayRequests(log.events, { registry });
    expect(replayed).toMatchObject({ seq: usage.seq, provider: 'openai-chat', model: 'gpt-4.1' });
    expect(replayed!.body).toBe(backup.requests[0]!.text);
    expect(replayed!.body).toContain('"temperature":0.5');
    expect(primary.requests).toHaveLength(1);
    expect(replayed!.body).not.toBe(primary.requests[0]!.text);

    // a log naming a fallback its spec does not hold is refused, never rebuilt with another model
    const naming = (fallback: object): Event[] =>
      log.events.map((event) =>
        event.seq === usage.seq
          ? ({ ...event, fallback: { index: 0, provider: 'openai-chat', model: 'gpt-4.1', ...fallback } } as Event)
          : event,
      );
    expect(() => replayRequests(naming({ index: 1 }), { registry })).toThrow(
      `the step at seq ${usage.seq} was made by fallback 1 (gpt-4.1), and the agent spec at seq 1 has fallbacks 0 to 0 only`,
    );
    expect(() => replayRequests(naming({ model: 'gpt-5' }), { registry })).toThrow(
      `the step at seq ${usage.seq} names fallback 0 as openai-chat gpt-5, and the agent spec at seq 1 has openai-chat gpt-4.1 there`,
    );
  });

  it('refuses a log it cannot replay, saying why', async () => {
    const log = new MemoryLog();
    log.append([
      draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'hi' }] }),
    ]);
    log.append([
      draftEvent({ ...ref, source: 'system' }, 'llm_usage', {
        purpose: 'step',
        model: 'm',
        prompt_tokens: 1,
        completion_tokens: 1,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        latency_ms: 1,
        cost_usd: 0,
        response_id: 'r',
      }),
    ]);
    expect(() => replayRequests(log.events, { registry })).toThrow(/seq 2 ran the deployment's default agent spec/);
    expect(() => replayRequests(log.events.slice(1), { registry })).toThrow(ReplayError);
    const unreadable = new MemoryLog();
    unreadable.append([
      draftEvent({ ...ref, source: 'user' }, 'agent_spec', { spec: { version: 99 }, reason: 'from the future' }),
    ]);
    unreadable.append(log.events.map(({ seq: _seq, ...event }) => event as EventDraft));
    expect(() => replayRequests(unreadable.events, { registry })).toThrow(
      /the agent spec at seq 1 is not one this build reads/,
    );
  });
});

describe('checkRequests', () => {
  const replayed = [
    { seq: 4, specSeq: 1, provider: 'openai-chat', model: 'm', body: '{"model":"m","messages":["é"]}' },
    { seq: 9, specSeq: 1, provider: 'openai-chat', model: 'm', body: '{"model":"m","messages":[]}' },
  ];

  it('matches by seq where the recording has them, naming the first differing byte', () => {
    const checks = checkRequests(replayed, [
      { seq: 9, body: '{"model":"m","messages":[]}' },
      { seq: 4, body: '{"model":"m","messages":["e"]}' },
    ]);
    expect(checks[1]).toEqual({ seq: 9, result: 'same' });
    expect(checks[0]).toMatchObject({ seq: 4, result: 'different', byte: 26 });
  });

  it('matches in order without seqs, and reports a step nothing was recorded for', () => {
    const checks = checkRequests(replayed, [{ body: replayed[0]!.body }]);
    expect(checks).toEqual([
      { seq: 4, result: 'same' },
      { seq: 9, result: 'missing' },
    ]);
  });
});
