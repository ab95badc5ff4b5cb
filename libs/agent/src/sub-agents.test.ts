import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { describe, expect, it } from 'vitest';
import { parseAgentConfig } from './agent-config.js';
import { AgentSpec } from './agent-spec.js';
import { childConversationId, childSpec } from './child-spec.js';
import { AgentCatalog } from './spec-catalog.js';
import { SpecRefused } from './spec-checks.js';
import { parseSubAgentMarkdown, TASK_TOOL } from './sub-agents.js';
import { specTools } from './task-tool.js';

const RESEARCHER = `---
name: researcher
description: Reads code and answers questions about it.
tools: [terminal, file_editor, finish]
model: fast
max_iteration_per_run: 40
---
You are a researcher. Read; never write.
`;
const CODER = `---
name: coder
description: Writes code in a workspace of its own.
tools:
  - terminal
  - file_editor
  - task
  - finish
workspace: own
---
You write code.`;

const defaults = parseAgentConfig({
  llm: { provider: 'openai-chat', model: 'house-model', baseURL: 'https://models.example/v1', apiKeyEnv: 'HOUSE_KEY' },
  tools: ['terminal', 'file_editor', 'think', 'finish'],
});
const settings = {
  profiles: {
    fast: { provider: 'openai-chat', model: 'fast-model', baseURL: 'https://fast.example/v1', apiKeyEnv: 'FAST_KEY' },
  },
  subAgents: [RESEARCHER, CODER],
  templates: {
    lead: { tools: ['terminal', 'file_editor', 'think', 'task', 'finish'], subAgents: ['researcher', 'coder'] },
  },
  limits: { maxSubAgents: 4 },
};

function refusal(run: () => unknown): { status: number; paths: string[] } {
  try {
    run();
  } catch (error) {
    if (error instanceof SpecRefused) return { status: error.status, paths: error.issues.map((issue) => issue.path) };
    throw error;
  }
  throw new Error('not refused');
}

describe('sub-agent definitions', () => {
  it('reads OpenHands-style Markdown: frontmatter fields and the body as the instructions', () => {
    const read = parseSubAgentMarkdown(RESEARCHER);
    expect(read).toEqual({
      ok: true,
      value: {
        definition: {
          name: 'researcher',
          description: 'Reads code and answers questions about it.',
          tools: ['terminal', 'file_editor', 'finish'],
          prompt: 'You are a researcher. Read; never write.',
          workspace: 'shared',
          maxIterationsPerRun: 40,
        },
        profile: 'fast',
      },
    });
    expect(parseSubAgentMarkdown(CODER)).toMatchObject({
      ok: true,
      value: { definition: { tools: ['terminal', 'file_editor', 'task', 'finish'], workspace: 'own' } },
    });
  });

  it('refuses a definition without a frontmatter, with a missing field or one it does not know, naming it', () => {
    expect(parseSubAgentMarkdown('Just a prompt.')).toMatchObject({ ok: false, issues: [{ path: '(frontmatter)' }] });
    expect(parseSubAgentMarkdown('---\nname: x\ntools: [terminal]\n---\nbody')).toMatchObject({
      ok: false,
      issues: [{ path: 'description' }],
    });
    expect(
      parseSubAgentMarkdown('---\nname: x\ndescription: d\ntools: [terminal]\npermission_mode: yolo\n---\n'),
    ).toMatchObject({ ok: false, issues: [{ path: 'permission_mode' }] });
    expect(parseSubAgentMarkdown('---\nname: Bad Name\ndescription: d\ntools: [terminal]\n---\n')).toMatchObject({
      ok: false,
      issues: [{ path: 'name' }],
    });
    expect(
      parseSubAgentMarkdown('---\nname: x\ndescription: d\ntools: [terminal]\nworkspace: elsewhere\n---\n'),
    ).toMatchObject({ ok: false, issues: [{ path: 'workspace' }] });
  });
});

describe('AgentCatalog and sub-agents', () => {
  const catalog = new AgentCatalog(defaults, settings);

  it('resolves the names a spec gives into whole definitions (models from their profiles, never a key) and writes the limits in', () => {
    const { spec } = catalog.resolve({ template: 'lead' });
    expect(spec.subAgents.map((agent) => agent.name)).toEqual(['researcher', 'coder']);
    expect(spec.subAgents[0]).toMatchObject({
      llm: { profile: 'fast', model: 'fast-model', baseURL: 'https://fast.example/v1' },
      maxIterationsPerRun: 40,
      prompt: 'You are a researcher. Read; never write.',
    });
    expect(spec.subAgents[1]!.llm).toBeUndefined();
    expect(JSON.stringify(spec)).not.toContain('FAST_KEY');
    // the operator's limit where the spec sets none, the default depth where neither does: the log says what held
    expect(spec.limits).toMatchObject({ maxSubAgents: 4, maxSubAgentDepth: 2 });
    expect(AgentSpec.parse(JSON.parse(JSON.stringify(spec)))).toEqual(spec);
    expect(catalog.subAgents().map((agent) => [agent.name, agent.model, agent.workspace])).toEqual([
      ['researcher', 'fast', 'shared'],
      ['coder', null, 'own'],
    ]);
  });

  it('refuses unknown sub-agents, definitions of the request’s own, tools beyond the spec’s, task without sub-agents, and limits above the operator’s', () => {
    expect(
      refusal(() => catalog.resolve({ spec: { tools: ['terminal', 'task', 'finish'], subAgents: ['nobody'] } })),
    ).toEqual({ status: 400, paths: ['spec.subAgents.0'] });
    expect(
      refusal(() =>
        catalog.resolve({
          spec: {
            tools: ['terminal', 'task', 'finish'],
            subAgents: [{ name: 'mine', description: 'x', tools: ['terminal'], prompt: '' }],
          },
        }),
      ),
    ).toEqual({ status: 400, paths: ['spec.subAgents.0'] });
    expect(
      refusal(() => catalog.resolve({ spec: { tools: ['terminal', 'task', 'finish'], subAgents: ['researcher'] } })),
    ).toEqual({ status: 400, paths: ['spec.subAgents.0.tools'] });
    expect(refusal(() => catalog.resolve({ spec: { tools: ['terminal', 'task', 'finish'] } }))).toEqual({
      status: 400,
      paths: ['spec.tools'],
    });
    expect(refusal(() => catalog.resolve({ template: 'lead', spec: { limits: { maxSubAgents: 5 } } }))).toEqual({
      status: 403,
      paths: ['spec.limits.maxSubAgents'],
    });
    expect(refusal(() => catalog.resolve({ template: 'lead', spec: { subAgents: ['coder', 'coder'] } }))).toEqual({
      status: 400,
      paths: ['spec.subAgents.1'],
    });
  });

  it('caps a spec at the documented 8 sub-agents and 2 levels where the operator set no limits, and at what the operator raised them to', () => {
    const unlimited = new AgentCatalog(defaults, { ...settings, limits: {} });
    expect(
      refusal(() =>
        unlimited.resolve({ template: 'lead', spec: { limits: { maxSubAgents: 64, maxSubAgentDepth: 8 } } }),
      ),
    ).toEqual({
      status: 403,
      paths: ['spec.limits.maxSubAgents', 'spec.limits.maxSubAgentDepth'],
    });
    expect(
      unlimited.resolve({ template: 'lead', spec: { limits: { maxSubAgents: 8, maxSubAgentDepth: 2 } } }).spec.limits,
    ).toMatchObject({ maxSubAgents: 8, maxSubAgentDepth: 2 });
    const raised = new AgentCatalog(defaults, { ...settings, limits: { maxSubAgents: 64, maxSubAgentDepth: 8 } });
    expect(
      raised.resolve({ template: 'lead', spec: { limits: { maxSubAgents: 64, maxSubAgentDepth: 8 } } }).spec.limits,
    ).toMatchObject({ maxSubAgents: 64, maxSubAgentDepth: 8 });
  });

  it('checks its own definitions at start: unknown profiles and tools, names given twice', () => {
    expect(refusal(() => new AgentCatalog(defaults, { subAgents: [RESEARCHER] })).paths).toEqual(['subAgents.0.model']);
    expect(
      refusal(
        () => new AgentCatalog(defaults, { ...settings, subAgents: [RESEARCHER.replace('finish]', 'web_search]')] }),
      ).paths,
    ).toEqual(['subAgents.0.tools']);
    expect(refusal(() => new AgentCatalog(defaults, { ...settings, subAgents: [CODER, CODER] })).paths).toEqual([
      'subAgents.1.name',
    ]);
    expect(refusal(() => new AgentCatalog(defaults, { subAgents: ['no frontmatter'] })).paths).toEqual([
      'subAgents.0.(frontmatter)',
    ]);
  });

  it('offers the task tool naming the spec’s sub-agents, and checks its calls', () => {
    const { spec } = catalog.resolve({ template: 'lead' });
    const tools = specTools(new ToolRegistry(createBuiltinTools()), spec);
    const task = tools.specs().find((tool) => tool.name === TASK_TOOL)!;
    expect(tools.specs().map((tool) => tool.name)).toEqual(['terminal', 'file_editor', 'think', 'finish', 'task']);
    expect(task.description).toContain('- researcher: Reads code and answers questions about it.');
    expect(task.parameters).toMatchObject({
      properties: { agent: { enum: ['researcher', 'coder'] } },
      required: ['agent', 'prompt'],
      additionalProperties: false,
    });
    expect(tools.check(TASK_TOOL, { agent: 'researcher', prompt: 'Find the bug.' })).toEqual({
      ok: true,
      input: { agent: 'researcher', prompt: 'Find the bug.' },
    });
    expect(tools.check(TASK_TOOL, { agent: 'writer', prompt: 'x' })).toMatchObject({
      ok: false,
      message: expect.stringContaining('no sub-agent "writer"'),
    });
    expect(tools.check(TASK_TOOL, { agent: 'coder', prompt: 'x', colour: 'red' })).toMatchObject({
      ok: false,
      message: expect.stringContaining('colour'),
    });
    expect(tools.isReadOnly(TASK_TOOL)).toBe(false);
    // without the tool named, no task tool: its sub-agents stay in the spec, unused
    expect(
      specTools(new ToolRegistry(createBuiltinTools()), { ...spec, tools: ['terminal', 'finish'] })
        .specs()
        .map((tool) => tool.name),
    ).toEqual(['terminal', 'finish']);
  });
});

describe('childSpec', () => {
  const catalog = new AgentCatalog(defaults, settings);
  const parent = catalog.resolve({
    template: 'lead',
    spec: {
      prompt: { instructions: 'You lead.', context: 'Repository notes.', includeDate: false },
      confirmation: { mode: 'risky', threshold: 'high' },
    },
  }).spec;

  it("keeps the parent's guards, takes the definition's tools, model, instructions and limit, and no MCP servers", () => {
    const researcher = childSpec(parent, parent.subAgents[0]!);
    expect(researcher).toMatchObject({
      tools: ['terminal', 'file_editor', 'finish'],
      llm: { profile: 'fast' },
      prompt: { instructions: 'You are a researcher. Read; never write.', includeDate: false },
      confirmation: { mode: 'risky' },
      subAgents: [],
      mcpServers: [],
      titles: { generate: false },
    });
    expect(researcher.prompt.context).toBeUndefined();
    expect(researcher.limits).toMatchObject({ maxIterationsPerRun: 40, maxSubAgents: 4, maxSubAgentDepth: 2 });
    // a sub-agent whose tools include task may start the parent's sub-agents (the depth limit decides how deep)
    const coder = childSpec(parent, parent.subAgents[1]!);
    expect(coder.llm).toEqual(parent.llm);
    expect(coder.subAgents.map((agent) => agent.name)).toEqual(['researcher', 'coder']);
    expect(AgentSpec.parse(JSON.parse(JSON.stringify(coder)))).toEqual(coder);
  });

  it('names a child after its parent and call, the same every time, within a conversation id', () => {
    const id = childConversationId({ tenant: 'acme', conversation: 'lead' }, 'action-1');
    expect(id).toMatch(/^sub-[0-9a-f]{32}$/);
    expect(childConversationId({ tenant: 'acme', conversation: 'lead' }, 'action-1')).toBe(id);
    expect(childConversationId({ tenant: 'acme', conversation: 'lead' }, 'action-2')).not.toBe(id);
    expect(childConversationId({ tenant: 'globex', conversation: 'lead' }, 'action-1')).not.toBe(id);
  });
});
