import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AgentSpec } from '@flotilla/agent';
import { draftEvent, type McpToolsEvent } from '@flotilla/events';
import { createBwrapProvider, DEFAULT_SANDBOX_SETTINGS, type Sandbox } from '@flotilla/sandbox';
import {
  createFinishTool,
  createThinkTool,
  createToolContext,
  openWorkspace,
  resultText,
  ToolRegistry,
  type ToolContext,
} from '@flotilla/tools';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpSessions, type McpListing } from './mcp-sessions.js';

/**
 * A minimal MCP server with no imports (it runs in the sandbox from the workspace): `where` says
 * which start of the server answers, `think` is named like a built-in, `exit` makes it die.
 */
const SERVER = `
import { createInterface } from 'node:readline';
const started = Math.random().toString(36).slice(2);
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
const tools = [
  { name: 'where', description: 'Which start of the server answers.', inputSchema: { type: 'object', properties: {} }, annotations: { readOnlyHint: true } },
  { name: 'think', description: 'Named like a built-in.', inputSchema: { type: 'object', properties: {} } },
  { name: 'exit', description: 'Dies.', inputSchema: { type: 'object', properties: {} } },
];
for await (const line of createInterface({ input: process.stdin })) {
  const request = JSON.parse(line);
  if (request.id === undefined) continue;
  if (request.method === 'initialize') send({ id: request.id, result: { protocolVersion: request.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'where', version: '1.0.0' } } });
  else if (request.method === 'tools/list') send({ id: request.id, result: { tools } });
  else if (request.method === 'tools/call' && request.params.name === 'exit') process.exit(3);
  else if (request.method === 'tools/call') send({ id: request.id, result: { content: [{ type: 'text', text: started + ' ' + (process.env.SERVER_TOKEN ?? '-') }] } });
  else send({ id: request.id, error: { code: -32601, message: 'unknown method' } });
}
`;

const ref = { tenant: 'acme', conversation: 'mcp' };
let root: string;
let sandbox: Sandbox;
let context: ToolContext;
const builtins = new ToolRegistry([createThinkTool(), createFinishTool()]);
const sessions = new McpSessions({ builtins, logger: pino({ level: 'silent' }) });

const specOf = (mcpServers: unknown[]): AgentSpec =>
  AgentSpec.parse({ version: 1, llm: { provider: 'openai-chat', model: 'm' }, mcpServers });
const local = { name: 'local', transport: 'stdio', command: 'node', args: ['/workspace/server.mjs'], prefix: false };

/** The listings as the log would hold them. */
function logged(listings: readonly McpListing[]): McpToolsEvent[] {
  return listings.map(
    (listing, index) =>
      ({
        ...draftEvent({ ...ref, source: 'environment' }, 'mcp_tools', {
          spec_seq: 1,
          ...listing,
          tools: [...listing.tools],
        }),
        id: `m${index}`,
        seq: index + 2,
      }) as McpToolsEvent,
  );
}

async function call(registry: ToolRegistry, name: string): Promise<{ text: string; isError: boolean }> {
  const result = await registry.execute({ name, arguments: '{}' }, context);
  return { text: resultText(result), isError: result.isError };
}

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'flotilla-mcp-sessions-'));
  await mkdir(path.join(root, 'workspace'));
  await writeFile(path.join(root, 'workspace', 'server.mjs'), SERVER);
  const provider = createBwrapProvider(DEFAULT_SANDBOX_SETTINGS, {
    stateDir: path.join(root, 'state'),
    ownedRoot: root,
  });
  sandbox = await provider.open({ id: 'acme.mcp', workspace: path.join(root, 'workspace') });
  context = createToolContext({
    workspace: await openWorkspace(path.join(root, 'workspace')),
    sandbox,
    conversationId: 'acme.mcp',
  });
});

afterAll(async () => {
  await sessions.closeAll();
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

describe('McpSessions', () => {
  it('lists each server once started in the sandbox: its tools (none named like a built-in), or why it has none', async () => {
    const spec = specOf([
      local,
      { name: 'gone', transport: 'stdio', command: 'node', args: ['/workspace/no-such-server.mjs'] },
      { ...local, name: 'keyed', env: { SERVER_TOKEN: { secret: 'TOKEN' } } },
    ]);
    const listings = await sessions.list({ id: 'acme.mcp', spec, sandbox, secrets: {} }, ['local', 'gone', 'keyed']);
    expect(listings[0]).toMatchObject({ server: 'local' });
    expect(listings[0]!.tools.map((tool) => tool.name)).toEqual(['where', 'exit']);
    expect(listings[0]!.tools[0]).toMatchObject({
      description: 'Which start of the server answers.',
      parameters: { type: 'object' },
      annotations: { read_only: true },
    });
    expect(listings[1]).toMatchObject({
      server: 'gone',
      tools: [],
      error: {
        code: 'mcp_connect_failed',
        message: expect.stringMatching(/could not be started or listed.*Cannot find module/s) as unknown,
      },
    });
    expect(listings[2]).toEqual({
      server: 'keyed',
      tools: [],
      error: {
        code: 'mcp_connect_failed',
        message: 'MCP server "keyed" needs the secret TOKEN, not set for this conversation or its tenant',
      },
    });
  });

  it('calls a listed tool through the running server, and starts a server that died again at its next use', async () => {
    const spec = specOf([local]);
    const use = { id: 'acme.mcp', spec, sandbox, secrets: {} };
    const listed = logged(await sessions.list(use, ['local']));
    const registry = await sessions.registry(use, listed);
    expect(registry.names()).toEqual(['think', 'finish', 'where', 'exit']);
    const first = await call(registry, 'where');
    expect(first.isError).toBe(false);
    // the same server answers while it runs
    expect((await call(await sessions.registry(use, listed), 'where')).text).toBe(first.text);
    expect((await call(registry, 'exit')).isError).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const again = await call(await sessions.registry(use, listed), 'where');
    expect(again.isError).toBe(false);
    expect(again.text).not.toBe(first.text);
  });

  it('starts a server again when its settings or secrets change; a listed tool whose server cannot start answers with why', async () => {
    const listed = logged([
      { server: 'local', tools: [{ name: 'where', description: 'x', parameters: { type: 'object' } }] },
    ]);
    const keyed = specOf([{ ...local, env: { SERVER_TOKEN: { secret: 'TOKEN' } } }]);
    const one = await call(
      await sessions.registry({ id: 'acme.mcp', spec: keyed, sandbox, secrets: { TOKEN: 'one' } }, listed),
      'where',
    );
    expect(one.text).toMatch(/ one$/);
    const broken = specOf([{ ...local, args: ['/workspace/no-such-server.mjs'] }]);
    const unavailable = await call(
      await sessions.registry({ id: 'acme.mcp', spec: broken, sandbox, secrets: {} }, listed),
      'where',
    );
    expect(unavailable.isError).toBe(true);
    expect(unavailable.text).toMatch(
      /^The MCP tool "where" could not be called: MCP server "local" could not be started or listed/,
    );
    // a runner that took the conversation over has no server yet: it starts one at the first call
    const other = new McpSessions({ builtins, logger: pino({ level: 'silent' }) });
    try {
      const taken = await call(
        await other.registry({ id: 'acme.mcp', spec: keyed, sandbox, secrets: { TOKEN: 'two' } }, listed),
        'where',
      );
      expect(taken).toMatchObject({ isError: false, text: expect.stringMatching(/ two$/) as unknown });
    } finally {
      await other.closeAll();
    }
  });

  it('runs only the built-ins for a conversation whose servers listed no tools', async () => {
    const registry = await sessions.registry(
      { id: 'acme.other', spec: specOf([local]), sandbox, secrets: {} },
      logged([{ server: 'local', tools: [], error: { code: 'mcp_connect_failed', message: 'x' } }]),
    );
    expect(registry).toBe(builtins);
  });
});
