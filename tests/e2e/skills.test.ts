import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Event } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import { taskMessage, type BrainTask } from '../support/brain-server.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

/**
 * Issue 18 item 5: what the workspace says reaches the model through the log. The tool runner
 * that owns the workspace reads it (workspace_context) before the first step; the step worker
 * builds the system prompt from it, activates keyword skills in the step's commit, and the tool
 * runner adds a nested AGENTS.md to the first observation touching its folder.
 */
const REST = ['finished', 'error', 'stuck'] as const;

/** Files put in a conversation's workspace before it exists, as a checkout would leave them. */
async function seedWorkspace(
  system: RunningTestSystem,
  ref: ConversationRef,
  files: Readonly<Record<string, string>>,
): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    const file = join(system.home, 'workspaces', ref.tenant, ref.conversation, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
  }
}

async function create(
  system: RunningTestSystem,
  id: string,
  task: Omit<BrainTask, 'id' | 'effects'> & { readonly note?: string },
  spec?: unknown,
): Promise<ConversationRef> {
  const created = await system.api('POST', '/conversations', {
    id,
    message: taskMessage({ id, effects: system.effects, ...task }),
    run: true,
    ...(spec === undefined ? {} : { spec }),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { tenant: 'acme', conversation: id };
}

/** The text the model read in each message of a recorded Chat Completions request. */
function messagesOf(body: string): { role: string; text: string }[] {
  const request = JSON.parse(body) as { messages: { role: string; content?: unknown }[] };
  return request.messages.map((message) => ({
    role: message.role,
    text:
      typeof message.content === 'string'
        ? message.content
        : Array.isArray(message.content)
          ? message.content.map((part: { text?: string }) => part.text ?? '').join('\n')
          : '',
  }));
}

const WORKSPACE = {
  'AGENTS.md': '# How we work\nREPO-RULE-7731: run the linter before every commit.\n',
  '.agents/skills/release.md':
    '---\nname: release\ntriggers: [ship-it, release]\n---\nSKILL-BODY-4242: to release, bump the version and push the tag.\n',
  '.agents/skills/pdf/SKILL.md':
    '---\nname: pdf-forms\ndescription: Read and fill PDF forms.\n---\nPDF-BODY-5151: the long instructions, read on demand.\n',
  'services/api/AGENTS.md': 'NESTED-RULE-9911: every handler validates its input.\n',
  'services/api/handler.ts': 'export const handler = 1;\n',
  'services/api/other.ts': 'export const other = 2;\n',
  'docs/readme.txt': 'nothing to see\n',
};

describe('skills and repository context from the workspace (through the services)', () => {
  it('AGENTS.md reaches the system prompt, a keyword skill activates once and is recorded, a nested AGENTS.md arrives with the first observation touching its folder', async () => {
    await using system = await startTestSystem({ gateway: true, recordModelRequests: true });
    const ref: ConversationRef = { tenant: 'acme', conversation: 'skills-on' };
    await seedWorkspace(system, ref, WORKSPACE);
    await create(system, ref.conversation, {
      note: 'please ship-it when done',
      steps: 3,
      calls: [
        { tool: 'file_editor', input: { command: 'view', path: '/workspace/docs/readme.txt' } },
        { tool: 'file_editor', input: { command: 'view', path: '/workspace/services/api/handler.ts' } },
        { tool: 'file_editor', input: { command: 'view', path: 'services/api/other.ts' } },
      ],
    });
    await system.waitForStatus([ref], REST, 60_000);
    expect(await system.status(ref)).toBe('finished');
    const events = await system.events(ref);

    // the tool runner read the workspace into the log before the first step
    const context = events.find(
      (event): event is Extract<Event, { type: 'workspace_context' }> => event.type === 'workspace_context',
    );
    expect(context).toBeDefined();
    const prompt = events.find((event) => event.type === 'system_prompt')!;
    expect(context!.seq).toBeLessThan(prompt.seq);
    expect(context!.repository.map((file) => file.path)).toEqual(['AGENTS.md']);
    expect(context!.knowledge.map((skill) => [skill.name, skill.triggers])).toEqual([
      ['release', ['ship-it', 'release']],
    ]);
    expect(context!.skills).toEqual([
      { name: 'pdf-forms', description: 'Read and fill PDF forms.', path: '.agents/skills/pdf/SKILL.md' },
    ]);
    expect(context!.rules.map((rule) => [rule.folder, rule.path])).toEqual([
      ['services/api', 'services/api/AGENTS.md'],
    ]);

    // every model request: the repository's instructions and the skill list in the system prompt;
    // the triggered skill's text in the user's turn; the SKILL.md body only if the agent reads it
    const requests = system.brain.requests.map(messagesOf);
    expect(requests.length).toBeGreaterThanOrEqual(4);
    for (const messages of requests) {
      const systemText = messages
        .filter((message) => message.role === 'system')
        .map((message) => message.text)
        .join('\n');
      expect(systemText).toContain('REPO-RULE-7731');
      expect(systemText).toContain('pdf-forms: Read and fill PDF forms. (.agents/skills/pdf/SKILL.md)');
      expect(systemText).not.toContain('PDF-BODY-5151');
      const userText = messages
        .filter((message) => message.role === 'user')
        .map((message) => message.text)
        .join('\n');
      expect(userText).toContain('SKILL-BODY-4242');
      expect(userText).toContain('keyword match for "ship-it"');
    }

    // the activation is recorded once, in the first step's commit, as OpenHands records it
    const activations = events.filter(
      (event): event is Extract<Event, { type: 'message' }> =>
        event.type === 'message' && (event.activated_skills?.length ?? 0) > 0,
    );
    expect(activations).toHaveLength(1);
    expect(activations[0]).toMatchObject({ source: 'environment', role: 'user', activated_skills: ['release'] });
    expect(activations[0]!.extended_content?.map((part) => (part.type === 'text' ? part.text : ''))[0]).toContain(
      'SKILL-BODY-4242',
    );
    expect(activations[0]!.seq).toBeGreaterThan(prompt.seq);
    expect(activations[0]!.seq).toBeLessThan(events.find((event) => event.type === 'action')!.seq);

    // the nested rule: with the first observation touching services/api, and only that one
    const observations = events.filter(
      (event): event is Extract<Event, { type: 'observation' }> => event.type === 'observation',
    );
    const texts = observations.map((observation) =>
      observation.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n'),
    );
    expect(texts).toHaveLength(3);
    expect(texts[0]).not.toContain('NESTED-RULE-9911');
    expect(texts[1]).toContain('NESTED-RULE-9911');
    expect(texts[1]).toContain('export const handler');
    expect(observations[1]!.details?.['path_rules']).toEqual(['services/api/AGENTS.md']);
    expect(texts[2]).toContain('export const other');
    expect(texts[2]).not.toContain('NESTED-RULE-9911');
    // and the model read it in the tool result
    const last = requests.at(-1)!;
    expect(
      last.filter((message) => message.role === 'tool').some((message) => message.text.includes('NESTED-RULE-9911')),
    ).toBe(true);

    // a second message naming the trigger again: the skill is not injected twice
    expect(
      (
        await system.api('POST', `/conversations/${ref.conversation}/messages`, {
          text: 'now ship-it again',
          run: true,
        })
      ).status,
    ).toBeLessThan(300);
    await expect
      .poll(async () => (await system.events(ref)).filter((event) => event.type === 'llm_usage').length, {
        timeout: 60_000,
        interval: 200,
      })
      .toBeGreaterThan(requests.length);
    await system.waitForStatus([ref], REST, 60_000);
    const after = await system.events(ref);
    expect(after.filter((event) => event.type === 'message' && (event.activated_skills?.length ?? 0) > 0)).toHaveLength(
      1,
    );
    expect(after.filter((event) => event.type === 'workspace_context')).toHaveLength(1);

    await expectAudited(system.log, ref);
  }, 120_000);

  it('skills off in the spec: the workspace is not read and nothing of it reaches the model', async () => {
    await using system = await startTestSystem({ gateway: true, recordModelRequests: true });
    const ref: ConversationRef = { tenant: 'acme', conversation: 'skills-off' };
    await seedWorkspace(system, ref, WORKSPACE);
    await create(
      system,
      ref.conversation,
      {
        note: 'please ship-it',
        steps: 1,
        calls: [{ tool: 'file_editor', input: { command: 'view', path: '/workspace/services/api/handler.ts' } }],
      },
      { skills: { enabled: false } },
    );
    await system.waitForStatus([ref], REST, 60_000);
    expect(await system.status(ref)).toBe('finished');
    const events = await system.events(ref);
    expect(events.some((event) => event.type === 'workspace_context')).toBe(false);
    const bodies = system.brain.requests.join('\n');
    expect(bodies).not.toContain('REPO-RULE-7731');
    expect(bodies).not.toContain('SKILL-BODY-4242');
    expect(bodies).not.toContain('NESTED-RULE-9911');
  }, 120_000);
});
