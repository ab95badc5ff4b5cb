import { draftEvent, type Event, type EventDraft } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { failedHook, hookOutcome, type HookOutcome } from './hook-outcome.js';
import { HooksConfig } from './hooks-config.js';
import { prepareDrafts } from './prepare-answer.js';
import { ConversationProgress } from './progress.js';
import { withToolHooks } from './tool-hooks.js';

const ref = { tenant: 't', conversation: 'c' };
const at = (source: 'user' | 'agent' | 'environment' | 'system' | 'hook') => ({
  ...ref,
  source,
  now: () => new Date(0),
});
let seq = 0;
const event = (draft: EventDraft): Event => ({ ...draft, seq: (seq += 1) }) as Event;
const hooksSpec = (hooks: unknown): Event =>
  event(
    draftEvent(at('user'), 'agent_spec', { spec: { version: 1, skills: { enabled: false }, hooks }, reason: 'test' }),
  );
const running = (): Event => event(draftEvent(at('system'), 'state_change', { status: 'running' }));
const user = (text: string): Event =>
  event(draftEvent(at('user'), 'message', { role: 'user', content: [{ type: 'text', text }] }));
const reply = (text: string): Event =>
  event(draftEvent(at('agent'), 'message', { role: 'assistant', content: [{ type: 'text', text }] }));
const hook = (command: string) => ({ hooks: [{ type: 'command', command }] });
const NONE = { context: false, sessionStart: false, prompts: [], stop: false, sessionEnd: false };

describe('hookOutcome', () => {
  it('reads exit 2 and a deny decision as a block, other output as allow with context, other exits as errors that block nothing', () => {
    expect(hookOutcome(2, '', 'no rm -rf\n')).toMatchObject({ decision: 'deny', exitCode: 2, reason: 'no rm -rf' });
    expect(hookOutcome(0, '{"decision":"deny","reason":"tests first"}', '')).toMatchObject({
      decision: 'deny',
      reason: 'tests first',
    });
    expect(hookOutcome(0, '{"decision":"block"}', '')).toMatchObject({ decision: 'deny', reason: 'blocked by a hook' });
    expect(
      hookOutcome(0, '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"nope"}}', ''),
    ).toMatchObject({ decision: 'deny', reason: 'nope' });
    expect(hookOutcome(0, '{"additionalContext":"freeze"}', '')).toMatchObject({
      decision: 'allow',
      context: 'freeze',
    });
    expect(hookOutcome(0, 'plain text\n', '')).toMatchObject({ decision: 'allow', context: 'plain text' });
    expect(hookOutcome(0, '', '')).toEqual({ decision: 'allow', exitCode: 0, output: '' });
    expect(hookOutcome(1, '', 'crashed')).toEqual({ decision: 'none', exitCode: 1, output: 'crashed' });
    expect(hookOutcome(0, 'x'.repeat(100_000), '').output.length).toBeLessThanOrEqual(4_000);
  });
});

describe('hook duties (nextWork prepare)', () => {
  it('a Stop hook is owed at each finish, and refuses at most one per run', () => {
    const progress = ConversationProgress.of([hooksSpec({ stop: [hook('x')] }), user('go'), running(), reply('done')]);
    expect(progress.nextWork()).toEqual({ kind: 'prepare', needs: { ...NONE, stop: true } });
    const deny = event(
      draftEvent(at('hook'), 'hook_execution', { hook: 'stop', command: 'x', exit_code: 0, decision: 'deny' }),
    );
    progress.append([
      deny,
      event(
        draftEvent(at('hook'), 'message', {
          role: 'user',
          content: [],
          extended_content: [{ type: 'text', text: 'refused' }],
        }),
      ),
    ]);
    expect(progress.nextWork()).toEqual({ kind: 'step' });
    progress.append([reply('done again')]);
    expect(progress.nextWork()).toEqual({ kind: 'finish' });
    expect(ConversationProgress.resume(progress.checkpoint()).nextWork()).toEqual({ kind: 'finish' });
    // a new run: the Stop hook may refuse again
    progress.append([
      event(draftEvent(at('system'), 'state_change', { status: 'finished' })),
      user('more'),
      running(),
      reply('done'),
    ]);
    expect(progress.nextWork()).toEqual({ kind: 'prepare', needs: { ...NONE, stop: true } });
    progress.append([
      event(draftEvent(at('hook'), 'hook_execution', { hook: 'stop', command: 'x', exit_code: 0, decision: 'allow' })),
    ]);
    expect(progress.nextWork()).toEqual({ kind: 'finish' });
  });

  it('UserPromptSubmit is owed per user message until a run names it as parent; SessionStart once; SessionEnd after a finished run', () => {
    const first = user('one');
    const progress = ConversationProgress.of([
      hooksSpec({ userPromptSubmit: [hook('x')], sessionStart: [hook('s')], sessionEnd: [hook('e')] }),
      first,
      running(),
    ]);
    expect(progress.nextWork()).toEqual({
      kind: 'prepare',
      needs: { ...NONE, sessionStart: true, prompts: [first.id] },
    });
    progress.append([
      event(
        draftEvent(at('hook'), 'hook_execution', {
          hook: 'session_start',
          command: 's',
          exit_code: 0,
          decision: 'allow',
        }),
      ),
      event(
        draftEvent({ ...at('hook'), parent: first.id }, 'hook_execution', {
          hook: 'user_prompt_submit',
          command: 'x',
          exit_code: 0,
          decision: 'allow',
        }),
      ),
    ]);
    expect(progress.nextWork()).toEqual({ kind: 'step' });
    progress.append([reply('done'), event(draftEvent(at('system'), 'state_change', { status: 'finished' }))]);
    expect(progress.nextWork()).toEqual({ kind: 'prepare', needs: { ...NONE, sessionEnd: true } });
    progress.append([
      event(
        draftEvent(at('hook'), 'hook_execution', {
          hook: 'session_end',
          command: 'e',
          exit_code: 0,
          decision: 'allow',
        }),
      ),
    ]);
    expect(progress.nextWork()).toEqual({ kind: 'rest' });
  });
});

describe('prepareDrafts and withToolHooks', () => {
  const run = (outcomes: Record<string, HookOutcome>) => (hook: { type: string; command?: string }) =>
    Promise.resolve(outcomes[hook.command ?? ''] ?? failedHook('unknown'));

  it('a blocked prompt ends the run idle saying why; added context becomes a message from the hook', async () => {
    const message = user('hello');
    const hooks = HooksConfig.parse({ userPromptSubmit: [hook('ctx'), hook('deny')] });
    const drafts = await prepareDrafts({
      needs: { ...NONE, prompts: [message.id] },
      events: [message],
      hooks,
      ref,
      readContext: () => Promise.reject(new Error('unused')),
      run: run({ ctx: hookOutcome(0, 'CTX', ''), deny: hookOutcome(2, '', 'NO') }),
    });
    expect(drafts.map((draft) => draft.type)).toEqual(['hook_execution', 'hook_execution', 'state_change']);
    expect(drafts[2]).toMatchObject({ status: 'idle', reason: 'a UserPromptSubmit hook blocked the message: NO' });
    const allowed = await prepareDrafts({
      needs: { ...NONE, prompts: [message.id] },
      events: [message],
      hooks: HooksConfig.parse({ userPromptSubmit: [hook('ctx')] }),
      ref,
      readContext: () => Promise.reject(new Error('unused')),
      run: run({ ctx: hookOutcome(0, 'CTX', '') }),
    });
    expect(allowed[1]).toMatchObject({
      type: 'message',
      source: 'hook',
      role: 'user',
      parent: message.id,
      extended_content: [{ type: 'text', text: 'CTX' }],
    });
  });

  it('a denied action is answered by a rejection from the hook and not run; the others run', async () => {
    const action = (command: string): Extract<Event, { type: 'action' }> =>
      event(
        draftEvent(at('agent'), 'action', {
          tool_name: 'terminal',
          tool_call_id: `call_${seq}`,
          arguments: '{}',
          input: { command },
          thought: [],
          response_id: 'r',
          security_risk: 'low',
        }),
      ) as Extract<Event, { type: 'action' }>;
    const [bad, good] = [action('rm -rf /'), action('ls')];
    const hooks = HooksConfig.parse({
      preToolUse: [{ matcher: 'terminal|grep', hooks: [{ type: 'command', command: 'check' }] }],
    });
    let ran: string[] = [];
    const drafts = await withToolHooks(
      [bad, good],
      hooks,
      ref,
      (_hook, input) => Promise.resolve(input.includes('rm -rf') ? hookOutcome(2, '', 'no') : hookOutcome(0, '', '')),
      (allowed) => {
        ran = allowed.map((entry) => entry.id);
        return Promise.resolve(
          allowed.map((entry) =>
            draftEvent({ ...at('environment'), parent: entry.id }, 'observation', {
              action_id: entry.id,
              tool_call_id: entry.tool_call_id,
              tool_name: 'terminal',
              content: [],
              is_error: false,
            }),
          ),
        );
      },
    );
    expect(ran).toEqual([good.id]);
    expect(drafts.map((draft) => draft.type)).toEqual([
      'hook_execution',
      'hook_execution',
      'user_rejection',
      'observation',
    ]);
    expect(drafts[2]).toMatchObject({ source: 'hook', rejection_source: 'hook', action_id: bad.id, reason: 'no' });
  });
});
