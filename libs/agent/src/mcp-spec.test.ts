import { draftEvent, withPositionalIds, type Event, type McpToolsEvent, type ToolSpec } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { parseAgentConfig } from './agent-config.js';
import { AgentSpec } from './agent-spec.js';
import { checkpointFolds, foldLoaded, parseConversationCheckpoint } from './conversation-checkpoint.js';
import { McpServerSpec, resolveMcpServer } from './mcp-spec.js';
import { unlistedServers, withListedTools } from './mcp-tools-catalog.js';
import { AgentCatalog } from './spec-catalog.js';
import { SpecRefused } from './spec-checks.js';
import { SpecFold } from './spec-fold.js';
import type { ToolCatalog } from './tool-catalog.js';

const ref = { tenant: 'acme', conversation: 'c1' };

const defaults = parseAgentConfig({
  llm: { provider: 'openai-chat', model: 'house-model' },
  tools: ['terminal', 'think', 'finish'],
});
const filesystem = {
  name: 'files',
  transport: 'stdio',
  command: 'node',
  args: ['/opt/mcp/server-filesystem/dist/index.js', '/workspace'],
} as const;
const remote = { name: 'docs', transport: 'http', url: 'https://mcp.example.com/docs/mcp' } as const;

/** The refusal `act` throws: its status and the fields it names. */
function refusal(act: () => unknown): { status: number; paths: string[]; message: string } {
  try {
    act();
  } catch (error) {
    if (!(error instanceof SpecRefused)) throw error;
    return { status: error.status, paths: error.issues.map((issue) => issue.path), message: error.message };
  }
  throw new Error('expected a SpecRefused');
}

describe('AgentCatalog and MCP servers', () => {
  it('runs no MCP server by default: a stdio server is refused naming its command, an HTTP one naming its URL', () => {
    const catalog = new AgentCatalog(defaults);
    expect(catalog.defaultSpec.mcpServers).toEqual([]);
    const refused = refusal(() => catalog.resolve({ spec: { mcpServers: [filesystem, remote] } }));
    expect(refused).toMatchObject({ status: 403, paths: ['spec.mcpServers.0.command', 'spec.mcpServers.1.url'] });
    expect(refused.message).toContain('"node" is not a command MCP servers may run here (allowed: none)');
  });

  it('allows the commands and URL prefixes the operator lists, and only those', () => {
    const catalog = new AgentCatalog(defaults, {
      limits: { mcpCommands: ['node'], mcpUrls: ['https://mcp.example.com/'] },
    });
    const { spec } = catalog.resolve({ spec: { mcpServers: [filesystem, remote] } });
    expect(spec.mcpServers).toEqual([
      { ...filesystem, prefix: true, env: {} },
      { ...remote, prefix: true, headers: {} },
    ]);
    expect(refusal(() => catalog.resolve({ spec: { mcpServers: [{ ...filesystem, command: 'npx' }] } }))).toMatchObject(
      { status: 403, paths: ['spec.mcpServers.0.command'] },
    );
    // a prefix, not a host: another host that begins alike is not allowed
    expect(
      refusal(() =>
        catalog.resolve({ spec: { mcpServers: [{ ...remote, url: 'https://mcp.example.com.evil.test/mcp' }] } }),
      ),
    ).toMatchObject({ status: 403, paths: ['spec.mcpServers.0.url'] });
  });

  it('checks a template’s servers and the deployment’s own against the limits too', () => {
    expect(() => new AgentCatalog(defaults, { templates: { fs: { mcpServers: [filesystem] } } })).toThrow(
      /templates\.fs\.mcpServers\.0\.command/,
    );
    const withServer = parseAgentConfig({ ...defaults, mcpServers: [filesystem] });
    expect(() => new AgentCatalog(withServer)).toThrow(/defaults\.mcpServers\.0\.command/);
    expect(new AgentCatalog(withServer, { limits: { mcpCommands: ['node'] } }).defaultSpec.mcpServers).toHaveLength(1);
  });

  it('takes secrets by name only, a working directory inside the workspace, bounded timeouts and distinct names (400 naming the field)', () => {
    const catalog = new AgentCatalog(defaults, {
      limits: { mcpCommands: ['node'], mcpUrls: ['https://mcp.example.com/'] },
    });
    const resolve = (server: Record<string, unknown>) =>
      refusal(() => catalog.resolve({ spec: { mcpServers: [server] } }));
    expect(resolve({ ...filesystem, env: { TOKEN: 'ghp_value-in-the-spec' } })).toMatchObject({
      status: 400,
      paths: ['spec.mcpServers.0.env.TOKEN'],
    });
    expect(resolve({ ...filesystem, env: { TOKEN: { secret: 'not a name' } } })).toMatchObject({
      status: 400,
      paths: ['spec.mcpServers.0.env.TOKEN.secret'],
    });
    expect(resolve({ ...remote, headers: { authorization: 'Bearer ghp_value' } })).toMatchObject({
      status: 400,
      paths: ['spec.mcpServers.0.headers.authorization'],
    });
    expect(resolve({ ...filesystem, cwd: '../other-conversation' })).toMatchObject({
      status: 400,
      paths: ['spec.mcpServers.0.cwd'],
    });
    expect(resolve({ ...filesystem, cwd: '/etc' })).toMatchObject({ status: 400, paths: ['spec.mcpServers.0.cwd'] });
    expect(resolve({ ...filesystem, callTimeoutMs: 10 })).toMatchObject({
      status: 400,
      paths: ['spec.mcpServers.0.callTimeoutMs'],
    });
    expect(resolve({ ...filesystem, name: 'files/../x' })).toMatchObject({
      status: 400,
      paths: ['spec.mcpServers.0.name'],
    });
    expect(refusal(() => catalog.resolve({ spec: { mcpServers: [filesystem, { ...filesystem }] } }))).toMatchObject({
      status: 400,
      paths: ['spec.mcpServers.1.name'],
    });
    const { spec } = catalog.resolve({
      spec: {
        mcpServers: [
          { ...filesystem, env: { TOKEN: { secret: 'GITHUB_TOKEN' } }, cwd: 'repo/src', listTimeoutMs: 5_000 },
        ],
      },
    });
    expect(spec.mcpServers[0]).toMatchObject({
      env: { TOKEN: { secret: 'GITHUB_TOKEN' } },
      cwd: 'repo/src',
      listTimeoutMs: 5_000,
    });
  });
});

describe('resolveMcpServer', () => {
  it('fills in each secret by name and the working directory as the sandbox sees it', () => {
    const stdio = McpServerSpec.parse({
      name: 'git',
      transport: 'stdio',
      command: 'node',
      args: ['server.js'],
      env: { TOKEN: { secret: 'GH_TOKEN' } },
      cwd: 'repo',
    });
    expect(resolveMcpServer(stdio, { GH_TOKEN: 'tok-1', OTHER: 'x' }, '/workspace')).toEqual({
      ok: true,
      config: {
        name: 'git',
        prefix: true,
        transport: 'stdio',
        command: 'node',
        args: ['server.js'],
        env: { TOKEN: 'tok-1' },
        cwd: '/workspace/repo',
      },
    });
    const http = McpServerSpec.parse({
      name: 'docs',
      transport: 'http',
      url: 'https://mcp.example.com/mcp',
      headers: { authorization: { secret: 'DOCS_KEY', prefix: 'Bearer ' } },
      callTimeoutMs: 5_000,
    });
    expect(resolveMcpServer(http, { DOCS_KEY: 'k-2' }, '/workspace')).toEqual({
      ok: true,
      config: {
        name: 'docs',
        prefix: true,
        transport: 'http',
        url: 'https://mcp.example.com/mcp',
        headers: { authorization: 'Bearer k-2' },
        callTimeoutMs: 5_000,
      },
    });
  });

  it('refuses a server whose secret is not set, naming it', () => {
    const stdio = McpServerSpec.parse({
      name: 'git',
      transport: 'stdio',
      command: 'node',
      env: { TOKEN: { secret: 'GH_TOKEN' } },
    });
    expect(resolveMcpServer(stdio, {}, '/workspace')).toEqual({
      ok: false,
      message: 'MCP server "git" needs the secret GH_TOKEN, not set for this conversation or its tenant',
    });
  });
});

const tool = (name: string, readOnly = false): ToolSpec => ({
  name,
  description: `the ${name} tool`,
  parameters: { type: 'object', properties: { path: { type: 'string' } } },
  annotations: { read_only: readOnly },
});

function specEvents(): Event[] {
  const spec = AgentSpec.parse({
    version: 1,
    llm: { provider: 'openai-chat', model: 'm' },
    tools: ['think'],
    mcpServers: [
      { name: 'files', transport: 'stdio', command: 'node' },
      { name: 'broken', transport: 'stdio', command: 'node' },
    ],
  });
  const drafts = [
    draftEvent({ ...ref, source: 'user' }, 'agent_spec', { spec, reason: 'conversation created' }),
    draftEvent({ ...ref, source: 'environment' }, 'mcp_tools', {
      spec_seq: 1,
      server: 'files',
      tools: [tool('files_read', true), tool('files_write'), tool('think')],
    }),
  ];
  return withPositionalIds(drafts, 1).map((draft, index) => ({ ...draft, seq: index + 1 }) as Event);
}

const base: ToolCatalog = {
  specs: () => [tool('think', true)],
  isReadOnly: (name) => name === 'think',
  check: (name, input) =>
    name === 'think' ? { ok: true, input } : { ok: false, message: `Tool "${name}" does not exist.` },
};

describe('the listing of a spec’s MCP servers', () => {
  it('keeps the listings for the spec in force, and forgets them with a new spec', () => {
    const events = specEvents();
    const fold = new SpecFold().append(events);
    expect(fold.listed().map((listing) => listing.server)).toEqual(['files']);
    const spec = AgentSpec.parse(fold.event()!.spec);
    expect(unlistedServers(spec, fold.listed())).toEqual(['broken']);

    const next = draftEvent({ ...ref, source: 'user' }, 'agent_spec', {
      spec: fold.event()!.spec,
      reason: 'model switched',
    });
    const stale = draftEvent({ ...ref, source: 'environment' }, 'mcp_tools', {
      spec_seq: 1,
      server: 'broken',
      tools: [],
      error: { code: 'mcp_connect_failed', message: 'late' },
    });
    fold.append([{ ...next, id: 'e3', seq: 3 } as Event, { ...stale, id: 'e4', seq: 4 } as Event]);
    // a listing for the older spec does not count for the new one
    expect(fold.listed()).toEqual([]);
    expect(unlistedServers(spec, fold.listed())).toEqual(['files', 'broken']);
  });

  it('is kept in a view checkpoint, so a reader of one knows the MCP tools', () => {
    const events = specEvents();
    const checkpoint = checkpointFolds(foldLoaded({ events }));
    const stored = JSON.parse(JSON.stringify(checkpoint)) as unknown;
    const parsed = parseConversationCheckpoint(stored);
    expect(parsed.ok).toBe(true);
    const resumed = foldLoaded({
      start: { state: (parsed as { checkpoint: typeof checkpoint }).checkpoint, folded: 0 },
      events: [],
    });
    expect(resumed.spec.listed().map((listing) => listing.server)).toEqual(['files']);
    expect(resumed.spec.event()?.seq).toBe(1);
  });

  it('offers the built-ins and the listed tools; a listed name a built-in has stays the built-in', () => {
    const listed = new SpecFold().append(specEvents()).listed();
    const catalog = withListedTools(base, listed);
    expect(catalog.specs().map((spec) => spec.name)).toEqual(['think', 'files_read', 'files_write']);
    expect(catalog.isReadOnly('files_read')).toBe(true);
    expect(catalog.isReadOnly('files_write')).toBe(false);
    // the server checks its own arguments
    expect(catalog.check('files_write', { path: 3 })).toEqual({ ok: true, input: { path: 3 } });
    expect(catalog.check('files_delete', {})).toMatchObject({ ok: false });
    expect(withListedTools(base, [])).toBe(base);
  });

  it('a failed server lists nothing and counts as answered', () => {
    const failed: McpToolsEvent = {
      ...(specEvents()[1] as McpToolsEvent),
      server: 'broken',
      tools: [],
      error: { code: 'mcp_connect_failed', message: 'no such command' },
    };
    const spec = AgentSpec.parse(
      specEvents()[0]!.type === 'agent_spec' ? (specEvents()[0] as { spec: unknown }).spec : {},
    );
    const listed = [specEvents()[1] as McpToolsEvent, failed];
    expect(unlistedServers(spec, listed)).toEqual([]);
    expect(withListedTools(base, [failed])).toBe(base);
  });
});
