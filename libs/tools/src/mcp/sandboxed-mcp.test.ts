import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createBwrapProvider, DEFAULT_SANDBOX_SETTINGS, type Sandbox } from '@flotilla/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToolContext } from '../core/context.js';
import { resultText } from '../core/result.js';
import { ToolRegistry } from '../core/tool-registry.js';
import { openWorkspace } from '../core/workspace.js';
import { connectMcpServers } from './connect-mcp-servers.js';

/**
 * A minimal MCP server with no imports (so it runs wherever node does, from the workspace): one
 * tool that says where it runs. Newline-delimited JSON-RPC, as the stdio transport speaks it.
 */
const WHERE_SERVER = `
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
for await (const line of createInterface({ input: process.stdin })) {
  const request = JSON.parse(line);
  if (request.id === undefined) continue;
  if (request.method === 'initialize') send({ id: request.id, result: { protocolVersion: request.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'where', version: '1.0.0' } } });
  else if (request.method === 'tools/list') send({ id: request.id, result: { tools: [{ name: 'where', description: 'Where this server runs.', inputSchema: { type: 'object', properties: {} } }] } });
  else if (request.method === 'tools/call') {
    const seen = { cwd: process.cwd(), workspaceFile: existsSync('/workspace/in-workspace.txt'), serviceHome: existsSync(process.argv[2]), env: Object.keys(process.env).sort() };
    send({ id: request.id, result: { content: [{ type: 'text', text: JSON.stringify(seen) }] } });
  } else send({ id: request.id, error: { code: -32601, message: 'unknown method' } });
}
`;

describe('an MCP stdio server in the conversation’s sandbox', () => {
  let root: string;
  let sandbox: Sandbox;
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'flotilla-mcp-sandbox-'));
    await mkdir(path.join(root, 'workspace'));
    const provider = createBwrapProvider(DEFAULT_SANDBOX_SETTINGS, {
      stateDir: path.join(root, 'state'),
      ownedRoot: root,
    });
    sandbox = await provider.open({
      id: 'acme.mcp',
      workspace: path.join(root, 'workspace'),
      env: { CONVERSATION_TOKEN: 'tok-1234' },
    });
  });
  afterAll(async () => {
    await sandbox?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('starts inside: it sees the workspace at /workspace and nothing of the host, with the sandbox’s environment', async () => {
    await writeFile(path.join(root, 'workspace', 'in-workspace.txt'), 'x');
    await writeFile(path.join(root, 'workspace', 'where-server.mjs'), WHERE_SERVER);
    process.env['FLOTILLA_SERVICE_SETTING'] = 'never-inside';
    const connection = await connectMcpServers(
      [
        {
          name: 'where',
          transport: 'stdio',
          command: 'node',
          args: ['/workspace/where-server.mjs', root],
          env: { SERVER_OPTION: 'on' },
        },
      ],
      { sandbox },
    );
    delete process.env['FLOTILLA_SERVICE_SETTING'];
    try {
      expect(connection.failures).toEqual([]);
      const registry = new ToolRegistry([...connection.tools]);
      const context = createToolContext({
        workspace: await openWorkspace(path.join(root, 'workspace')),
        sandbox,
        conversationId: 'acme.mcp',
      });
      const said = resultText(await registry.execute({ name: 'where_where', arguments: '{}' }, context));
      expect(said).toMatch(/^{/);
      const seen = JSON.parse(said) as { cwd: string; workspaceFile: boolean; serviceHome: boolean; env: string[] };
      expect(seen).toMatchObject({ cwd: '/workspace', workspaceFile: true, serviceHome: false });
      expect(seen.env).toEqual(expect.arrayContaining(['CONVERSATION_TOKEN', 'SERVER_OPTION', 'PATH', 'HOME']));
      expect(seen.env.filter((name) => name.startsWith('FLOTILLA_'))).toEqual([]);
    } finally {
      await connection.close();
    }
  });

  it('a server that cannot start in the sandbox is reported with its stderr', async () => {
    const connection = await connectMcpServers(
      [{ name: 'missing', transport: 'stdio', command: 'node', args: ['/nonexistent/server.mjs'] }],
      { sandbox, listTimeoutMs: 10_000 },
    );
    expect(connection.tools).toEqual([]);
    expect(connection.failures[0]?.error.message).toMatch(/could not be started or listed.*Cannot find module/s);
    await connection.close();
  });
});
