import type { Event } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import { taskMessage, type BrainTask } from '../support/brain-server.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

/**
 * Issue 18 item 4: hooks with OpenHands' semantics, run by the conversation's tool runner (shell
 * hooks in its sandbox, the event as JSON on stdin), each run a hook_execution event.
 */
const REST = ['finished', 'error', 'stuck', 'idle'] as const;

async function create(
  system: RunningTestSystem,
  id: string,
  task: Omit<BrainTask, 'id' | 'effects'>,
  hooks: unknown,
): Promise<ConversationRef> {
  const created = await system.api('POST', '/conversations', {
    id,
    message: taskMessage({ id, effects: system.effects, ...task }),
    run: true,
    spec: { hooks },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { tenant: 'acme', conversation: id };
}

const command = (text: string, timeoutSeconds?: number) => ({
  type: 'command',
  command: text,
  ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }),
});
const runs = (events: readonly Event[], hook?: string) =>
  events.filter(
    (event): event is Extract<Event, { type: 'hook_execution' }> =>
      event.type === 'hook_execution' && (hook === undefined || event.hook === hook),
  );
const textOf = (event: Event): string =>
  event.type === 'message' || event.type === 'observation'
    ? [...event.content, ...(event.type === 'message' ? (event.extended_content ?? []) : [])]
        .map((part) => (part.type === 'text' ? part.text : ''))
        .join('\n')
    : '';
/** Every text the model was sent, per request. */
const requestTexts = (system: RunningTestSystem): string[] =>
  system.brain.requests.filter((body) => !body.includes('You name conversations'));

describe('hooks (through the services)', () => {
  it('a PreToolUse hook blocks a command and the model reads why; SessionStart and PostToolUse add what the model reads; SessionEnd runs when the run finishes', async () => {
    await using system = await startTestSystem({ gateway: true, recordModelRequests: true });
    const ref = await create(
      system,
      'hooks-pre',
      { steps: 2, commands: ['rm -rf build && echo REMOVED-IT', 'echo second-command-ran'] },
      {
        sessionStart: [{ hooks: [command('echo SESSION-CONTEXT-31')] }],
        preToolUse: [
          {
            matcher: 'terminal',
            hooks: [
              command(`grep -q 'rm -rf' && { echo 'HOOK-DENIED: no rm -rf in this repository' >&2; exit 2; }; exit 0`),
            ],
          },
        ],
        postToolUse: [
          { matcher: 'terminal', hooks: [command(`cat > /dev/null; echo '{"additionalContext": "POST-NOTE-12"}'`)] },
        ],
        sessionEnd: [{ hooks: [command('cat > /dev/null; echo bye')] }],
      },
    );
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 60_000);
    expect(await system.status(ref)).toBe('finished');
    await expect
      .poll(async () => runs(await system.events(ref), 'session_end').length, { timeout: 30_000, interval: 200 })
      .toBe(1);
    const events = await system.events(ref);

    // the blocked command: a rejection from the hook with its reason, never run
    const [first, second] = events.filter(
      (event): event is Extract<Event, { type: 'action' }> => event.type === 'action',
    );
    const rejection = events.find(
      (event): event is Extract<Event, { type: 'user_rejection' }> => event.type === 'user_rejection',
    );
    expect(rejection).toMatchObject({
      source: 'hook',
      rejection_source: 'hook',
      action_id: first!.id,
      reason: 'HOOK-DENIED: no rm -rf in this repository',
    });
    expect(events.some((event) => event.type === 'observation' && event.action_id === first!.id)).toBe(false);
    expect(
      events
        .filter((event) => event.type === 'observation')
        .map(textOf)
        .join('\n'),
    ).not.toContain('REMOVED-IT');
    const pre = runs(events, 'pre_tool_use');
    expect(pre.map((run) => [run.action_id, run.decision, run.exit_code])).toEqual([
      [first!.id, 'deny', 2],
      [second!.id, 'allow', 0],
    ]);
    // the model read why, in the blocked call's result
    expect(
      requestTexts(system).some((body) =>
        body.includes('A hook rejected this action; it was not run. Reason: HOOK-DENIED: no rm -rf in this repository'),
      ),
    ).toBe(true);

    // the allowed command ran, and its result carries what the PostToolUse hook added
    const observation = events.find(
      (event): event is Extract<Event, { type: 'observation' }> =>
        event.type === 'observation' && event.action_id === second!.id,
    )!;
    expect(textOf(observation)).toContain('second-command-ran');
    expect(textOf(observation)).toContain('POST-NOTE-12');
    expect(runs(events, 'post_tool_use').map((run) => run.action_id)).toEqual([second!.id]);

    // SessionStart: once, before the first step, its output a message from the hook that the model reads
    const start = runs(events, 'session_start');
    expect(start).toHaveLength(1);
    const prompt = events.find((event) => event.type === 'system_prompt')!;
    expect(start[0]!.seq).toBeLessThan(prompt.seq);
    expect(
      events.some(
        (event) => event.type === 'message' && event.source === 'hook' && textOf(event).includes('SESSION-CONTEXT-31'),
      ),
    ).toBe(true);
    expect(requestTexts(system).every((body) => body.includes('SESSION-CONTEXT-31'))).toBe(true);

    // SessionEnd: after the finish
    const finished = events.find((event) => event.type === 'state_change' && event.status === 'finished')!;
    expect(runs(events, 'session_end')[0]!.seq).toBeGreaterThan(finished.seq);
    await expectAudited(system.log, ref);
  }, 120_000);

  it('a Stop hook refuses a finish once, with feedback the model reads; the next finish ends the run', async () => {
    await using system = await startTestSystem({ gateway: true, recordModelRequests: true });
    const ref = await create(
      system,
      'hooks-stop',
      { steps: 1 },
      {
        stop: [
          {
            hooks: [
              command(
                `cat > /dev/null; echo '{"decision": "deny", "reason": "STOP-FEEDBACK-77: run the tests first"}'`,
              ),
            ],
          },
        ],
      },
    );
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 60_000);
    expect(await system.status(ref)).toBe('finished');
    const events = await system.events(ref);
    const stops = runs(events, 'stop');
    expect(stops.map((run) => run.decision)).toEqual(['deny']);
    const feedback = events.find((event) => event.type === 'message' && event.source === 'hook')!;
    expect(textOf(feedback)).toContain('A Stop hook refused to end the run: STOP-FEEDBACK-77: run the tests first');
    // two final answers: the refused one, then the one that finished the run after the model read the feedback
    const answers = events.filter((event) => event.type === 'message' && event.source === 'agent');
    expect(answers).toHaveLength(2);
    expect(answers[0]!.seq).toBeLessThan(stops[0]!.seq);
    expect(feedback.seq).toBeLessThan(answers[1]!.seq);
    expect(requestTexts(system).some((body) => body.includes('STOP-FEEDBACK-77'))).toBe(true);
    const finished = events.filter((event) => event.type === 'state_change' && event.status === 'finished');
    expect(finished).toHaveLength(1);
    expect(finished[0]!.seq).toBeGreaterThan(answers[1]!.seq);
    await expectAudited(system.log, ref);
  }, 120_000);

  it('a UserPromptSubmit hook adds context the model reads, or blocks a message; an HTTP hook to a URL the operator does not allow is refused', async () => {
    await using system = await startTestSystem({ gateway: true, recordModelRequests: true });
    const hooks = {
      userPromptSubmit: [
        {
          hooks: [
            command(
              `grep -q 'forbidden' && { echo 'PROMPT-BLOCKED-9' >&2; exit 2; }; echo 'PROMPT-CONTEXT-55: the deploy freeze is on'`,
            ),
          ],
        },
      ],
    };
    const ref = await create(system, 'hooks-prompt', { steps: 1 }, hooks);
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 60_000);
    expect(await system.status(ref)).toBe('finished');
    const events = await system.events(ref);
    const user = events.find((event) => event.type === 'message' && event.source === 'user')!;
    const prompts = runs(events, 'user_prompt_submit');
    expect(prompts.map((run) => [run.parent, run.decision])).toEqual([[user.id, 'allow']]);
    const added = events.find((event) => event.type === 'message' && event.source === 'hook')!;
    expect(textOf(added)).toContain('PROMPT-CONTEXT-55: the deploy freeze is on');
    expect(added.seq).toBeLessThan(events.find((event) => event.type === 'system_prompt')!.seq);
    expect(requestTexts(system).every((body) => body.includes('PROMPT-CONTEXT-55'))).toBe(true);

    // a message the hook blocks: the run ends idle, saying why, and the model is not asked
    const before = requestTexts(system).length;
    expect(
      (
        await system.api('POST', `/conversations/${ref.conversation}/messages`, {
          text: 'do the forbidden thing',
          run: true,
        })
      ).status,
    ).toBeLessThan(300);
    await expect
      .poll(async () => runs(await system.events(ref), 'user_prompt_submit').length, { timeout: 30_000, interval: 200 })
      .toBe(2);
    await system.waitForStatus([ref], REST, 30_000);
    const after = await system.events(ref);
    expect(runs(after, 'user_prompt_submit')[1]).toMatchObject({ decision: 'deny', exit_code: 2 });
    expect(after.at(-1)).toMatchObject({
      type: 'state_change',
      status: 'idle',
      reason: 'a UserPromptSubmit hook blocked the message: PROMPT-BLOCKED-9',
    });
    expect(requestTexts(system).length).toBe(before);

    const refused = await system.api('POST', '/conversations', {
      id: 'hooks-http',
      message: 'hi',
      spec: { hooks: { stop: [{ hooks: [{ type: 'http', url: 'http://127.0.0.1:9/hook' }] }] } },
    });
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).toContain('spec.hooks.stop.0.hooks.0.url');
    await expectAudited(system.log, ref);
  }, 120_000);
});
