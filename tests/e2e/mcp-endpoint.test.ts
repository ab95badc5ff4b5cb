import type { Event } from '@flotilla/events';
import { ACME_KEY, startGatewayHarness } from '@flotilla/gateway/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAudited } from '../support/audited.js';
import { taskMessage } from '../support/brain-task.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

/** What a tool call answered, as a test reads it. */
type ToolAnswer = {
  readonly isError: boolean;
  readonly text: string;
  readonly structured: Record<string, unknown> | undefined;
};

/** Flotilla as an MCP server, called with the official MCP client against every service. */
describe('Flotilla as an MCP server (/mcp)', () => {
  let system: RunningTestSystem;
  const clients: Client[] = [];
  const task = (id: string, extra: { latencyMs?: number } = {}): string =>
    taskMessage({ id, steps: 1, effects: system.effects, ...extra });
  const events = (conversation: string): Promise<Event[]> => system.events({ tenant: 'acme', conversation });

  /** An MCP client of the gateway's /mcp with `key` as its bearer token. */
  const connect = async (key: string): Promise<Client> => {
    const client = new Client({ name: 'mcp-endpoint-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', system.gatewayUrl), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  };
  const call = async (
    client: Client,
    name: string,
    args: Record<string, unknown>,
    onprogress?: (progress: Progress) => void,
  ): Promise<ToolAnswer> => {
    const result = await client.callTool({ name, arguments: args }, undefined, {
      timeout: 90_000,
      ...(onprogress ? { onprogress, resetTimeoutOnProgress: true } : {}),
    });
    const content = (result.content ?? []) as { type: string; text?: string }[];
    return {
      isError: result.isError === true,
      text: content.map((part) => part.text ?? '').join('\n'),
      structured: result.structuredContent as Record<string, unknown> | undefined,
    };
  };
  let acme: Client;

  beforeAll(async () => {
    system = await startTestSystem({
      gateway: true,
      gatewayEnv: { FLOTILLA_GATEWAY_AGENT_ENDPOINTS: 'mcp', FLOTILLA_GATEWAY_WEB_UI: 'false' },
      // an agent whose every action waits for confirmation
      catalog: { templates: { careful: { confirmation: { mode: 'always' } } } },
    });
    acme = await connect(system.apiKey);
  }, 120_000);
  afterAll(async () => {
    await Promise.allSettled(clients.map((client) => client.close()));
    await system?.[Symbol.asyncDispose]();
  });

  it('lists its five tools, each with its input schema and bounds', async () => {
    expect(acme.getServerVersion()).toMatchObject({ name: 'flotilla' });
    expect(acme.getInstructions()).toContain('start_conversation');
    const { tools } = await acme.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'approve',
      'get_conversation',
      'read_events',
      'send_message',
      'start_conversation',
    ]);
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('start_conversation')!.inputSchema).toMatchObject({
      type: 'object',
      required: ['message'],
      properties: { message: { type: 'string' }, template: {}, profile: {}, title: {}, wait: { type: 'boolean' } },
    });
    expect(byName.get('read_events')!.inputSchema.properties).toMatchObject({ limit: { maximum: 200 } });
    expect(byName.get('approve')!.inputSchema.properties).toMatchObject({ decision: { enum: ['approve', 'reject'] } });
    expect(byName.get('read_events')!.annotations).toMatchObject({ readOnlyHint: true });
    for (const tool of tools) expect(tool.description!.length).toBeGreaterThan(40);
  });

  let first: string;

  it('start_conversation runs the agent to its answer, reporting progress as it goes', async () => {
    const progress: Progress[] = [];
    const answer = await call(
      acme,
      'start_conversation',
      { message: task('mcp-start'), title: 'Through MCP' },
      (notification) => progress.push(notification),
    );
    expect(answer.isError).toBe(false);
    expect(answer.structured).toMatchObject({
      status: 'finished',
      answer: 'Done: 1 steps for mcp-start.',
      error: null,
      conversation: expect.any(String),
    });
    first = answer.structured!['conversation'] as string;
    expect(answer.text).toContain('Done: 1 steps for mcp-start.');
    expect(answer.text).toContain(first);

    // a notification per event of the run, in order, and the answer's text as the model streamed it
    expect(progress.map((notification) => notification.progress)).toEqual(progress.map((_, index) => index + 1));
    const lines = progress.map((notification) => notification.message ?? '');
    const eventLines = lines.filter((line) => /^#\d+ /.test(line));
    expect(eventLines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^#\d+ action: terminal/),
        expect.stringMatching(/^#\d+ observation: terminal/),
        expect.stringMatching(/^#\d+ message: assistant: Done: 1 steps for mcp-start\.$/),
        expect.stringMatching(/^#\d+ state_change: finished$/),
      ]),
    );
    const seqs = eventLines.map((line) => Number(/^#(\d+)/.exec(line)![1]));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const streamed = lines.filter((line) => !/^#\d+ /.test(line)).join('');
    expect(streamed).toContain('Done: 1 steps for mcp-start.');

    await expectAudited(system.log, { tenant: 'acme', conversation: first });
  }, 90_000);

  it('send_message goes on with the conversation; get_conversation and read_events read it', async () => {
    const before = (await events(first)).length;
    const answer = await call(acme, 'send_message', { conversation: first, message: 'Now check the tests too.' });
    expect(answer, answer.text).toMatchObject({ isError: false });
    expect(answer.structured).toMatchObject({
      conversation: first,
      status: 'finished',
      answer: 'Done: 1 steps for mcp-start.',
    });
    const log = await events(first);
    const sent = log.findIndex(
      (event) => event.type === 'message' && JSON.stringify(event.content).includes('Now check the tests too.'),
    );
    expect(sent).toBeGreaterThanOrEqual(before);
    // the answer is this run's: a new agent message after the message sent
    expect(log.slice(sent).some((event) => event.type === 'message' && event.role === 'assistant')).toBe(true);

    const conversation = await call(acme, 'get_conversation', { conversation: first });
    expect(conversation.structured).toMatchObject({
      conversation: first,
      status: 'finished',
      title: 'Through MCP',
      answer: 'Done: 1 steps for mcp-start.',
      last_seq: log.at(-1)!.seq,
    });

    const page = await call(acme, 'read_events', { conversation: first, limit: 3 });
    expect(page.isError).toBe(false);
    const items = page.structured!['events'] as Event[];
    expect(items.map((event) => event.seq)).toEqual([1, 2, 3]);
    expect(page.structured!['next_after_seq']).toBe(3);
    expect(JSON.parse(page.text)).toEqual(page.structured);
    const rest = await call(acme, 'read_events', { conversation: first, after_seq: 3, limit: 200 });
    const later = rest.structured!['events'] as Event[];
    expect(later[0]!.seq).toBe(4);
    expect(later.length).toBe(log.length - 3);
    expect(later.map((event) => event.type)).toEqual(expect.arrayContaining(['action', 'observation']));
    const end = await call(acme, 'read_events', { conversation: first, after_seq: log.at(-1)!.seq });
    expect(end.structured).toEqual({ events: [], next_after_seq: log.at(-1)!.seq });
  }, 90_000);

  it('without wait returns the conversation at once; a message to it while it runs joins that run', async () => {
    const started = await call(acme, 'start_conversation', {
      message: task('mcp-nowait', { latencyMs: 1_500 }),
      wait: false,
    });
    expect(started.structured).toMatchObject({ status: 'running', answer: null });
    const id = started.structured!['conversation'] as string;
    const joined = await call(acme, 'send_message', { conversation: id, message: 'Keep it short.' });
    expect(joined.structured).toMatchObject({
      conversation: id,
      status: 'finished',
      answer: 'Done: 1 steps for mcp-nowait.',
    });
    const log = await events(id);
    const sent = log.findIndex(
      (event) => event.type === 'message' && JSON.stringify(event.content).includes('Keep it short.'),
    );
    const runs = log.filter((event) => event.type === 'state_change' && event.status === 'running');
    // one run: the message came while it was going and no new run started for it
    expect(runs).toHaveLength(1);
    expect(runs[0]!.seq).toBeLessThan(log[sent]!.seq);
    expect(log.slice(sent).some((event) => event.type === 'state_change' && event.status === 'finished')).toBe(true);
    const later = await call(acme, 'get_conversation', { conversation: id });
    expect(later.structured).toMatchObject({ status: 'finished', answer: 'Done: 1 steps for mcp-nowait.' });
  }, 90_000);

  it('a run that waits for confirmation says so; approve runs it to its answer; reject refuses with the reason', async () => {
    const waiting = await call(acme, 'start_conversation', { message: task('mcp-careful'), template: 'careful' });
    expect(waiting.isError).toBe(false);
    expect(waiting.structured).toMatchObject({ status: 'waiting_for_confirmation', answer: null });
    expect(waiting.text).toContain('approve');
    const id = waiting.structured!['conversation'] as string;
    expect((await events(id)).some((event) => event.type === 'observation')).toBe(false);

    // a message does not run it on: the caller is told to answer the confirmation first
    const busy = await call(acme, 'send_message', { conversation: id, message: 'go on' });
    expect(busy.isError).toBe(true);
    expect(busy.text).toContain('approve');

    const approved = await call(acme, 'approve', { conversation: id, decision: 'approve' });
    expect(approved.structured).toMatchObject({
      conversation: id,
      status: 'finished',
      answer: 'Done: 1 steps for mcp-careful.',
    });
    const log = await events(id);
    expect(log.map((event) => event.type)).toEqual(expect.arrayContaining(['approval', 'observation']));
    const again = await call(acme, 'approve', { conversation: id, decision: 'approve' });
    expect(again.isError).toBe(true);
    expect(again.text).toMatch(/^Conflict: .*\(code not_waiting\)/);

    const refused = await call(acme, 'start_conversation', { message: task('mcp-refused'), template: 'careful' });
    const other = refused.structured!['conversation'] as string;
    expect(refused.structured).toMatchObject({ status: 'waiting_for_confirmation' });
    const rejected = await call(acme, 'approve', { conversation: other, decision: 'reject', reason: 'not on main' });
    expect(rejected.structured).toMatchObject({ conversation: other, status: 'idle', answer: null });
    expect(rejected.text).toContain('send_message');
    const rejection = (await events(other)).find((event) => event.type === 'user_rejection');
    expect(rejection).toMatchObject({ reason: 'not on main' });
    await expectAudited(system.log, { tenant: 'acme', conversation: id });
  }, 120_000);

  it('refuses bad input as tool errors naming what is wrong', async () => {
    const empty = await call(acme, 'start_conversation', { message: '' });
    expect(empty.isError).toBe(true);
    expect(empty.text).toMatch(/message/);
    const tooMany = await call(acme, 'read_events', { conversation: first, limit: 201 });
    expect(tooMany.isError).toBe(true);
    expect(tooMany.text).toMatch(/limit/);
    const badId = await call(acme, 'get_conversation', { conversation: '../etc' });
    expect(badId.isError).toBe(true);
    expect(badId.text).toMatch(/conversation/);
    const template = await call(acme, 'start_conversation', { message: 'hi', template: 'no-such-template' });
    expect(template.isError).toBe(true);
    expect(template.text).toMatch(/^Invalid input: .*no template "no-such-template"/);
    const missing = await call(acme, 'get_conversation', { conversation: 'no-such-conversation' });
    expect(missing).toMatchObject({ isError: true });
    expect(missing.text).toMatch(/^Not found: .*no-such-conversation/);
  });

  it("another tenant's key finds none of acme's conversations and changes nothing", async () => {
    const globex = await connect(system.otherApiKey);
    const before = await events(first);
    for (const [name, args] of [
      ['get_conversation', { conversation: first }],
      ['read_events', { conversation: first }],
      ['send_message', { conversation: first, message: 'leak it', wait: false }],
      ['approve', { conversation: first, decision: 'approve' }],
    ] as const) {
      const answer = await call(globex, name, args);
      expect(answer.isError, name).toBe(true);
      expect(answer.text, name).toMatch(/^Not found: /);
      expect(answer.text, name).not.toContain('Through MCP');
    }
    expect(await events(first)).toEqual(before);
  });

  it('a bad key or none is refused with 401 before MCP; GET and DELETE answer 405', async () => {
    const refused = await connect('not-a-key-0123456789abcdef').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StreamableHTTPError);
    expect((refused as StreamableHTTPError).code).toBe(401);
    const anonymous = await fetch(`${system.gatewayUrl}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: { code: 'unauthorized' } });
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(`${system.gatewayUrl}/mcp`, {
        method,
        headers: { authorization: `Bearer ${system.apiKey}` },
      });
      expect(response.status, method).toBe(405);
      expect(await response.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    }
  });

  it('is not served unless the operator enables it', async () => {
    await using harness = await startGatewayHarness();
    const response = await fetch(`${harness.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ACME_KEY}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(404);
  }, 60_000);
});
