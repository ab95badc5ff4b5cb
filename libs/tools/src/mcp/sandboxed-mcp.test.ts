import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBwrapProvider, DEFAULT_SANDBOX_SETTINGS, type Sandbox } from '@flotilla/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToolContext } from '../core/context.js';
import { resultText } from '../core/result.js';
import { ToolRegistry } from '../core/tool-registry.js';
import { openWorkspace } from '../core/workspace.js';
import { connectMcpServers } from './connect-mcp-servers.js';

const fixture = fileURLToPath(new URL('../../fixtures/echo-mcp-server.mjs', import.meta.url));
// the fixture and the packages it imports, seen read-only inside
const repository = fileURLToPath(new URL('../../../..', import.meta.url));
const filesystemServer = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');

describe('an MCP stdio server in the conversation’s sandbox', () => {
  let root: string;
  let sandbox: Sandbox;
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'flotilla-mcp-sandbox-'));
    await mkdir(path.join(root, 'workspace'));
    const provider = createBwrapProvider({ ...DEFAULT_SANDBOX_SETTINGS, readOnlyPaths: [repository] }, { stateDir: path.join(root, 'state'), ownedRoot: root });
    sandbox = await provider.open({ id: 'acme.mcp', workspace: path.join(root, 'workspace'), env: { CONVERSATION_TOKEN: 'tok-1234' } });
  });
  afterAll(async () => {
    await sandbox?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('starts inside: it sees the workspace at /workspace and nothing of the host', async () => {
    await writeFile(path.join(root, 'workspace', 'in-workspace.txt'), 'x');
    const connection = await connectMcpServers(
      [
        { name: 'fixture', transport: 'stdio', command: 'node', args: [fixture] },
        { name: 'files', transport: 'stdio', command: 'node', args: [filesystemServer, '/workspace'] },
      ],
      { sandbox },
    );
    try {
      expect(connection.failures).toEqual([]);
      const registry = new ToolRegistry([...connection.tools]);
      const context = createToolContext({ workspace: await openWorkspace(path.join(root, 'workspace')), sandbox, conversationId: 'acme.mcp' });
      const call = async (name: string, input: Record<string, unknown>): Promise<string> => resultText(await registry.execute({ name, arguments: JSON.stringify(input) }, context));
      expect(await call('fixture_echo', { text: 'from the sandbox' })).toBe('echo: from the sandbox');
      // /workspace exists only in the sandbox: the server runs in there
      expect(existsSync('/workspace')).toBe(false);
      expect(await call('files_list_directory', { path: '/workspace' })).toContain('in-workspace.txt');
    } finally {
      await connection.close();
    }
  });

  it('a server that cannot start in the sandbox is reported with its stderr', async () => {
    const connection = await connectMcpServers([{ name: 'missing', transport: 'stdio', command: 'node', args: ['/nonexistent/server.mjs'] }], { sandbox, listTimeoutMs: 10_000 });
    expect(connection.tools).toEqual([]);
    expect(connection.failures[0]?.error.message).toMatch(/could not be started or listed.*Cannot find module/s);
    await connection.close();
  });
});
