import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolContext } from '../core/context.js';
import { createToolContext } from '../core/context.js';
import { resultText } from '../core/result.js';
import { ToolRegistry } from '../core/tool-registry.js';
import { openWorkspace } from '../core/workspace.js';
import { connectMcpServers } from './connect-mcp-servers.js';

const fixture = fileURLToPath(new URL('../../fixtures/echo-mcp-server.mjs', import.meta.url));
let dir: string;
let context: ToolContext;

function resolveEverythingServer(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const manifest = require.resolve('@modelcontextprotocol/server-everything/package.json');
    const bin = path.join(path.dirname(manifest), 'dist', 'index.js');
    return existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'flotilla-mcp-test-'));
  context = createToolContext({ workspace: await openWorkspace(dir), conversationId: 'c1' });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('connectMcpServers over stdio', () => {
  it('lists and calls tools, reports failing servers and skips them', async () => {
    await using connection = await connectMcpServers(
      [
        { name: 'fx', transport: 'stdio', command: process.execPath, args: [fixture], callTimeoutMs: 500 },
        { name: 'missing', transport: 'stdio', command: 'flotilla-no-such-command-xyz' },
        {
          name: 'crashes',
          transport: 'stdio',
          command: process.execPath,
          args: ['-e', 'console.error("boom on start"); process.exit(3)'],
        },
        { name: 'bad-config', transport: 'stdio', command: '' },
      ],
      { listTimeoutMs: 10_000 },
    );
    expect(connection.tools.map((tool) => tool.name).sort()).toEqual(['fx_echo', 'fx_fail', 'fx_pixel', 'fx_slow']);
    expect(connection.failures.map((failure) => failure.server).sort()).toEqual(['bad-config', 'crashes', 'missing']);
    const crash = connection.failures.find((failure) => failure.server === 'crashes');
    expect(crash?.error.code).toBe('mcp_connect_failed');
    expect(crash?.error.message).toContain('boom on start');

    const registry = new ToolRegistry(connection.tools);
    const echo = registry.schemas().find((schema) => schema.name === 'fx_echo');
    expect(echo?.parameters).toMatchObject({
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
    });
    expect(registry.get('fx_echo')?.annotations.readOnly).toBe(true);

    expect(resultText(await registry.execute({ name: 'fx_echo', arguments: '{"text":"hi"}' }, context))).toBe(
      'echo: hi',
    );
    const failed = await registry.execute({ name: 'fx_fail', arguments: '{}' }, context);
    expect(failed.isError).toBe(true);
    expect(resultText(failed)).toContain('on purpose');
    const invalid = await registry.execute({ name: 'fx_echo', arguments: '{"text":5}' }, context);
    expect(invalid.isError).toBe(true);
    const slow = await registry.execute({ name: 'fx_slow', arguments: '{}' }, context);
    expect(slow.isError).toBe(true);
    expect(resultText(slow)).toMatch(/timed out/i);
    const pixel = await registry.execute({ name: 'fx_pixel', arguments: '{}' }, context);
    expect(pixel.content[0]).toMatchObject({ type: 'image', mediaType: 'image/png' });
  });

  it('says whether its servers are still connected: not after one exits, nor after close', async () => {
    // answers initialize and tools/list, then exits at its first call, as a crashing server does
    const exitsOnCall = `
      const rl = require('node:readline').createInterface({ input: process.stdin });
      const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n');
      rl.on('line', (line) => {
        const r = JSON.parse(line);
        if (r.method === 'initialize') send({ id: r.id, result: { protocolVersion: r.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'x', version: '1' } } });
        else if (r.method === 'tools/list') send({ id: r.id, result: { tools: [{ name: 'die', inputSchema: { type: 'object' } }] } });
        else if (r.method === 'tools/call') process.exit(7);
      });`;
    const crashing = await connectMcpServers([
      { name: 'crashy', transport: 'stdio', command: process.execPath, args: ['-e', exitsOnCall] },
    ]);
    expect(crashing.isOpen()).toBe(true);
    const died = await new ToolRegistry(crashing.tools).execute({ name: 'crashy_die', arguments: '{}' }, context);
    expect(died.isError).toBe(true);
    for (let attempt = 0; attempt < 50 && crashing.isOpen(); attempt += 1)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(crashing.isOpen()).toBe(false);
    await crashing.close();

    const fx = await connectMcpServers([
      { name: 'fx', transport: 'stdio', command: process.execPath, args: [fixture] },
    ]);
    expect(fx.isOpen()).toBe(true);
    await fx.close();
    expect(fx.isOpen()).toBe(false);
    const none = await connectMcpServers([
      { name: 'missing', transport: 'stdio', command: 'flotilla-no-such-command-xyz' },
    ]);
    expect(none.isOpen()).toBe(false);
  });

  it('can keep the server tool names unprefixed', async () => {
    await using connection = await connectMcpServers([
      { name: 'fx', transport: 'stdio', command: process.execPath, args: [fixture], prefix: false },
    ]);
    expect(connection.tools.map((tool) => tool.name)).toContain('echo');
  });
});

describe('connectMcpServers over Streamable HTTP', () => {
  let server: ChildProcess;
  let url: string;

  beforeAll(async () => {
    const portFile = path.join(dir, 'port');
    server = spawn(process.execPath, [fixture, '--http', portFile], { stdio: 'ignore' });
    for (let attempt = 0; attempt < 100 && !existsSync(portFile); attempt += 1)
      await new Promise((resolve) => setTimeout(resolve, 50));
    url = `http://127.0.0.1:${(await readFile(portFile, 'utf8')).trim()}/mcp`;
  });

  afterAll(() => {
    server.kill();
  });

  it('connects with headers, calls tools, and reports a rejected connection', async () => {
    await using connection = await connectMcpServers([
      { name: 'web', transport: 'http', url, headers: { 'x-test-token': 'secret' } },
      { name: 'no-token', transport: 'http', url },
    ]);
    expect(connection.failures.map((failure) => failure.server)).toEqual(['no-token']);
    const echo = connection.tools.find((tool) => tool.name === 'web_echo');
    const result = await echo?.execute({ text: 'over http' }, context);
    expect(result && resultText(result)).toBe('echo: over http');
  });
});

const everything = resolveEverythingServer();

describe.skipIf(everything === undefined)('reference server @modelcontextprotocol/server-everything', () => {
  it('lists and calls its echo tool', async () => {
    await using connection = await connectMcpServers(
      [{ name: 'everything', transport: 'stdio', command: process.execPath, args: [everything ?? '', 'stdio'] }],
      {
        listTimeoutMs: 20_000,
      },
    );
    expect(connection.failures).toEqual([]);
    const echo = connection.tools.find((tool) => tool.name === 'everything_echo');
    expect(echo).toBeDefined();
    const result = await echo?.execute({ message: 'hello' }, context);
    expect(result && resultText(result)).toContain('hello');
  });
});

if (everything === undefined) {
  describe('reference server @modelcontextprotocol/server-everything', () => {
    it.skip('skipped: not installed (add it as a devDependency to run this test)', () => undefined);
  });
}
