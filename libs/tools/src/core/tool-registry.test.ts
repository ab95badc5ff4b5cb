import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createBuiltinTools } from '../builtin-tools.js';
import type { ToolContext } from './context.js';
import { createToolContext } from './context.js';
import { resultText, textResult } from './result.js';
import { defineTool } from './tool-definition.js';
import { ToolRegistry } from './tool-registry.js';
import { openWorkspace } from './workspace.js';

let dir: string;
let context: ToolContext;
const registry = new ToolRegistry(createBuiltinTools({ terminal: { softTimeoutSeconds: 1 } }), { outputLimit: 2_000 });

registry.register(
  defineTool({
    name: 'echo',
    description: 'Echo text, optionally many times.',
    parameters: z.object({ text: z.string(), times: z.number().int().min(1).default(1) }),
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    resources: () => [],
    execute: async (params) => textResult(params.text.repeat(params.times)),
  }),
);
registry.register(
  defineTool({
    name: 'explode',
    description: 'Always throws.',
    parameters: z.object({}),
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    resources: () => [],
    execute: async () => {
      throw new Error('kaboom');
    },
  }),
);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'flotilla-registry-test-'));
  context = createToolContext({ workspace: await openWorkspace(dir), conversationId: 'conv/1' });
});

afterAll(async () => {
  await registry.close();
  await rm(dir, { recursive: true, force: true });
});

describe('ToolRegistry', () => {
  it('lists JSON schemas for the model', () => {
    const schemas = registry.schemas();
    expect(schemas.map((schema) => schema.name)).toEqual(
      expect.arrayContaining([
        'terminal',
        'file_editor',
        'task_tracker',
        'think',
        'finish',
        'grep',
        'glob',
        'apply_patch',
        'echo',
      ]),
    );
    const editor = schemas.find((schema) => schema.name === 'file_editor');
    expect(editor?.parameters).toMatchObject({ type: 'object', required: ['command', 'path'] });
    expect(JSON.stringify(editor?.parameters)).not.toContain('$schema');
    expect(JSON.stringify(editor?.parameters)).not.toContain('9007199254740991');
    const echo = schemas.find((schema) => schema.name === 'echo');
    expect(echo?.parameters).toMatchObject({ required: ['text'] });
  });

  it('reports an unknown tool and lists the available ones', async () => {
    const result = await registry.execute({ name: 'nope', arguments: '{}' }, context);
    expect(result.isError).toBe(true);
    expect(resultText(result)).toContain('Tool "nope" does not exist. Available tools: terminal, file_editor');
    expect(result.details?.['error_code']).toBe('unknown_tool');
  });

  it('reports invalid JSON and non-object arguments', async () => {
    const invalid = await registry.execute({ name: 'echo', arguments: '{"text": "a",' }, context);
    expect(invalid.isError).toBe(true);
    expect(resultText(invalid)).toContain('not valid JSON');
    const array = registry.validate({ name: 'echo', arguments: '[1]' }, context);
    expect(array.ok).toBe(false);
    expect(!array.ok && array.message).toContain('must be a JSON object, got an array');
  });

  it('names the fields that violate the schema', async () => {
    const result = await registry.execute({ name: 'echo', arguments: '{"times": 0}' }, context);
    const text = resultText(result);
    expect(result.isError).toBe(true);
    expect(text).toContain('Invalid arguments for tool "echo"');
    expect(text).toMatch(/- text: .*expected string/);
    expect(text).toMatch(/- times: .*>=1/);
    const nested = registry.validate(
      { name: 'file_editor', arguments: '{"command":"view","path":"a","view_range":[1,"x"]}' },
      context,
    );
    expect(!nested.ok && nested.message).toContain('view_range[1]');
  });

  it('refuses arguments a tool does not know (every built-in is strict), and tells the model so in its schema', async () => {
    const misspelt = registry.validate({ name: 'terminal', arguments: '{"cmd":"rm -rf build"}' }, context);
    expect(misspelt.ok).toBe(false);
    expect(!misspelt.ok && misspelt.message).toMatch(/Invalid arguments for tool "terminal"[\s\S]*cmd/);
    expect(registry.validate({ name: 'terminal', arguments: '{"command":"ls"}' }, context).ok).toBe(true);
    for (const schema of registry.schemas())
      expect(schema.parameters, schema.name).toMatchObject({ additionalProperties: false });
  });

  it('validates, reports resources and executes', async () => {
    const validated = registry.validate(
      { name: 'file_editor', arguments: '{"command":"view","path":"src/a.ts"}' },
      context,
    );
    expect(validated.ok && validated.resources).toEqual([`file:${path.join(context.workspace.root, 'src/a.ts')}`]);
    const result = await registry.execute({ name: 'echo', arguments: '{"text":"hi","times":2}' }, context);
    expect(resultText(result)).toBe('hihi');
    expect((await registry.execute({ name: 'think', arguments: '' }, context)).isError).toBe(true);
  });

  it('turns a throwing tool into an error result', async () => {
    const result = await registry.execute({ name: 'explode', arguments: '{}' }, context);
    expect(result.isError).toBe(true);
    expect(resultText(result)).toContain('kaboom');
  });

  it('bounds every tool output and offloads the full text', async () => {
    const result = await registry.execute(
      { name: 'echo', arguments: JSON.stringify({ text: 'line\n', times: 1_000 }) },
      context,
    );
    const text = resultText(result);
    expect(text.length).toBeLessThanOrEqual(2_000);
    const saved = /saved to (\S+);/.exec(text)?.[1] ?? '';
    expect(saved.startsWith(path.join(context.outputDir, 'echo_output_'))).toBe(true);
    expect(saved.startsWith(context.workspace.root)).toBe(false); // the service's area, not the agent's workspace
    expect(await readFile(saved, 'utf8')).toBe('line\n'.repeat(1_000));
  });

  it('runs the simple built-ins', async () => {
    const finish = await registry.execute({ name: 'finish', arguments: '{"message":"All done"}' }, context);
    expect(resultText(finish)).toBe('All done');
    expect(finish.details?.['finished']).toBe(true);
    expect(resultText(await registry.execute({ name: 'think', arguments: '{"thought":"hmm"}' }, context))).toContain(
      'logged',
    );
    const empty = await registry.execute({ name: 'task_tracker', arguments: '{"command":"view"}' }, context);
    expect(resultText(empty)).toContain('empty');
    const plan = {
      command: 'plan',
      task_list: [
        { title: 'Write tests', status: 'done' },
        { title: 'Ship', status: 'in_progress', notes: 'after review' },
      ],
    };
    await registry.execute({ name: 'task_tracker', arguments: JSON.stringify(plan) }, context);
    const view = resultText(await registry.execute({ name: 'task_tracker', arguments: '{"command":"view"}' }, context));
    expect(view).toContain('1/2 done');
    expect(view).toContain('[x] Write tests');
    expect(view).toContain('[~] Ship');
    const badStatus = await registry.execute(
      { name: 'task_tracker', arguments: '{"command":"plan","task_list":[{"title":"x","status":"later"}]}' },
      context,
    );
    expect(resultText(badStatus)).toContain('task_list[0].status');
  });
});
