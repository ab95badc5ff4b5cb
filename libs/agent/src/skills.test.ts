import { draftEvent, type Event, type EventDraft, type WorkspaceContextEvent } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { actionPaths, withPathRules, workspaceRelative } from './path-rules.js';
import { ConversationProgress } from './progress.js';
import { skillActivationDraft } from './skill-activation.js';
import { parseSkillFile } from './skill-file.js';
import { SkillsFold } from './skills-fold.js';
import { workspaceContextPrompt } from './skills-prompt.js';

const ref = { tenant: 't', conversation: 'c' };
const at = (source: 'user' | 'agent' | 'environment' | 'system') => ({ ...ref, source, now: () => new Date(0) });
let seq = 0;
const event = (draft: EventDraft): Event => ({ ...draft, seq: (seq += 1) }) as Event;
const user = (text: string): Event =>
  event(draftEvent(at('user'), 'message', { role: 'user', content: [{ type: 'text', text }] }));
const agentReply = (text: string): Event =>
  event(draftEvent(at('agent'), 'message', { role: 'assistant', content: [{ type: 'text', text }] }));
const spec = (skills?: unknown): Event =>
  event(
    draftEvent(at('user'), 'agent_spec', {
      spec: { version: 1, ...(skills === undefined ? {} : { skills }) },
      reason: 'test',
    }),
  );
const running = (): Event => event(draftEvent(at('system'), 'state_change', { status: 'running' }));
const context = (payload: Partial<Omit<WorkspaceContextEvent, keyof Event>> = {}): WorkspaceContextEvent =>
  event(
    draftEvent(at('environment'), 'workspace_context', {
      repository: [],
      knowledge: [],
      skills: [],
      rules: [],
      notes: [],
      ...payload,
    }),
  ) as WorkspaceContextEvent;
const NO_NEEDS = { context: false, sessionStart: false, prompts: [], stop: false, sessionEnd: false };
const release = {
  name: 'release',
  path: '.agents/skills/release.md',
  content: 'bump and tag',
  truncated: false,
  triggers: ['Ship-It', 'release'],
};
const action = (tool: string, input: Record<string, unknown>): Extract<Event, { type: 'action' }> =>
  event(
    draftEvent(at('agent'), 'action', {
      tool_name: tool,
      tool_call_id: `call_${seq}`,
      arguments: JSON.stringify(input),
      input,
      thought: [],
      response_id: 'r',
      security_risk: 'low',
    }),
  ) as Extract<Event, { type: 'action' }>;
const observationOf = (of: Extract<Event, { type: 'action' }>): EventDraft =>
  draftEvent({ ...at('environment'), parent: of.id }, 'observation', {
    action_id: of.id,
    tool_call_id: of.tool_call_id,
    tool_name: of.tool_name,
    content: [{ type: 'text', text: 'ok' }],
    is_error: false,
  });

describe('the workspace context duty (nextWork prepare)', () => {
  it('is owed before the first step of a spec with skills on (the default), until a workspace_context is logged, and survives a checkpoint', () => {
    const progress = ConversationProgress.of([spec(), user('hi'), running()]);
    expect(progress.nextWork()).toEqual({ kind: 'prepare', needs: { ...NO_NEEDS, context: true } });
    expect(ConversationProgress.resume(progress.checkpoint()).nextWork()).toEqual({
      kind: 'prepare',
      needs: { ...NO_NEEDS, context: true },
    });
    progress.append([context()]);
    expect(progress.nextWork()).toEqual({ kind: 'step' });
    expect(ConversationProgress.resume(progress.checkpoint()).nextWork()).toEqual({ kind: 'step' });
  });

  it('is not owed with skills off, in a log without a spec, or while the conversation is not running', () => {
    expect(ConversationProgress.of([spec({ enabled: false }), user('hi'), running()]).nextWork()).toEqual({
      kind: 'step',
    });
    expect(ConversationProgress.of([user('hi'), running()]).nextWork()).toEqual({ kind: 'step' });
    expect(ConversationProgress.of([spec(), user('hi')]).nextWork()).toEqual({ kind: 'rest' });
    // a later spec turning skills on owes it then
    expect(ConversationProgress.of([spec({ enabled: false }), running(), spec({ enabled: true })]).nextWork()).toEqual({
      kind: 'prepare',
      needs: { ...NO_NEEDS, context: true },
    });
  });
});

describe('keyword skills', () => {
  it('activate from the user messages since the agent last spoke, case-insensitively, each once per conversation', () => {
    const events = [context({ knowledge: [release] }), user('please SHIP-IT today')];
    const draft = skillActivationDraft(events, SkillsFold.of(events), at('agent'));
    expect(draft).toMatchObject({
      type: 'message',
      source: 'environment',
      role: 'user',
      content: [],
      activated_skills: ['release'],
    });
    const text = draft?.type === 'message' ? draft.extended_content?.[0] : undefined;
    expect(text?.type === 'text' ? text.text : '').toMatch(
      /keyword match for "Ship-It".*\n\nbump and tag\n<\/EXTRA_INFO>$/su,
    );

    const activated = [...events, event(draft!)];
    expect(
      skillActivationDraft(
        [...activated, agentReply('done'), user('release again')],
        SkillsFold.of(activated),
        at('agent'),
      ),
    ).toBeUndefined();
    // a message the agent already answered is not read again
    const answered = [context({ knowledge: [release] }), user('release'), agentReply('done'), user('thanks')];
    expect(skillActivationDraft(answered, SkillsFold.of([answered[0]!]), at('agent'))).toBeUndefined();
    expect(
      skillActivationDraft(
        [context({ knowledge: [release] }), user('nothing here')],
        SkillsFold.of([context({ knowledge: [release] })]),
        at('agent'),
      ),
    ).toBeUndefined();
  });

  it('the fold resumes from its checkpoint', () => {
    const events = [
      context({ knowledge: [release] }),
      event(draftEvent(at('environment'), 'message', { role: 'user', content: [], activated_skills: ['release'] })),
    ];
    const resumed = SkillsFold.resume(SkillsFold.of(events).checkpoint());
    expect([...resumed.activated]).toEqual(['release']);
    expect(resumed.context?.knowledge).toEqual([release]);
  });
});

describe('path rules', () => {
  const rules = [
    { folder: 'services/api', path: 'services/api/AGENTS.md', content: 'validate input', truncated: false },
    { folder: 'services', path: 'services/AGENTS.md', content: 'services rule', truncated: false },
  ];

  it('join the first observation of an action touching their folder, each once, recorded in details.path_rules', () => {
    const fold = SkillsFold.of([context({ rules })]);
    const elsewhere = action('file_editor', { command: 'view', path: '/workspace/docs/a.md' });
    const inside = action('file_editor', { command: 'view', path: '/workspace/services/api/x.ts' });
    const again = action('file_editor', { command: 'view', path: 'services/api/y.ts' });
    const touched = (of: Extract<Event, { type: 'action' }>) =>
      actionPaths(of).flatMap((path) => workspaceRelative(path, ['/workspace']) ?? []);
    const drafts = withPathRules(
      [elsewhere, inside, again],
      [elsewhere, inside, again].map(observationOf),
      fold,
      touched,
    );
    const texts = drafts.map((draft) =>
      draft.type === 'observation'
        ? draft.content.map((part) => (part.type === 'text' ? part.text : '')).join('|')
        : '',
    );
    expect(texts[0]).toBe('ok');
    expect(texts[1]).toContain('validate input');
    expect(texts[1]).toContain('services rule');
    expect(texts[2]).toBe('ok');
    expect(drafts[1]).toMatchObject({ details: { path_rules: ['services/api/AGENTS.md', 'services/AGENTS.md'] } });
    // once logged, never again
    const later = SkillsFold.of([context({ rules }), event(drafts[1]!)]);
    const plain = observationOf(again);
    expect(withPathRules([again], [plain], later, touched)[0]).toBe(plain);
  });

  it('read paths relative to the workspace, never outside it, and the files of a patch', () => {
    expect(workspaceRelative('/workspace/a/b.ts', ['/workspace'])).toBe('a/b.ts');
    expect(workspaceRelative('./a/../c.ts', ['/workspace'])).toBe('c.ts');
    expect(workspaceRelative('../etc/passwd', ['/workspace'])).toBeUndefined();
    expect(workspaceRelative('/etc/passwd', ['/workspace'])).toBeUndefined();
    const patch = '*** Begin Patch\n*** Add File: services/api/new.ts\n+x\n*** End Patch';
    expect(actionPaths(action('apply_patch', { patch }))).toEqual(['services/api/new.ts']);
    expect(actionPaths(action('terminal', { command: 'cat services/api/x.ts' }))).toEqual([]);
  });
});

describe('the system prompt part and skill files', () => {
  it('shows the repository files and lists SKILL.md skills by name and description', () => {
    const prompt = workspaceContextPrompt(
      context({
        repository: [{ path: 'AGENTS.md', content: 'use pnpm', truncated: true }],
        skills: [{ name: 'pdf', description: 'fill forms', path: '.agents/skills/pdf/SKILL.md' }],
      }),
    );
    expect(prompt).toContain('<REPO_CONTEXT>');
    expect(prompt).toContain('[AGENTS.md, its beginning only]\nuse pnpm');
    expect(prompt).toContain('- pdf: fill forms (.agents/skills/pdf/SKILL.md)');
    expect(workspaceContextPrompt(context())).toBeUndefined();
    expect(workspaceContextPrompt(undefined)).toBeUndefined();
  });

  it('reads the frontmatter skill files use, and takes a file without one as all body', () => {
    expect(
      parseSkillFile('---\nname: "git"\ntriggers:\n  - git\n  - \'github\'\ndescription: x\n---\n\nBody\n'),
    ).toEqual({ attributes: { name: 'git', triggers: ['git', 'github'], description: 'x' }, body: 'Body' });
    expect(parseSkillFile('---\ntriggers: [a, "b c"]\nnested:\n  key: value\n---\nB')).toEqual({
      attributes: { triggers: ['a', 'b c'], nested: [] },
      body: 'B',
    });
    expect(parseSkillFile('# Just text\n---\nmore')).toEqual({ attributes: {}, body: '# Just text\n---\nmore' });
    expect(parseSkillFile('---\nname: open\nno closing fence')).toEqual({
      attributes: {},
      body: '---\nname: open\nno closing fence',
    });
  });
});
