import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { draftEvent, type Event } from '@flotilla/events';
import { appendWithRetry } from '@flotilla/log';
import { LlmError, ScriptedLanguageModel } from '@flotilla/llm';
import { describe, expect, it } from 'vitest';
import { call, conversationFixture } from './test-support/conversation-fixture.js';

const text = (event: Event): string =>
  'content' in event ? event.content.map((part) => (part.type === 'text' ? part.text : '')).join('') : '';

describe('LocalConversation with real tools', () => {
  it('creates a file, runs its test, fixes it with str_replace, reruns and finishes', async () => {
    await using fixture = await conversationFixture();
    const file = join(fixture.workspace.root, 'sum.js');
    const test = join(fixture.workspace.root, 'sum.test.js');
    const llm = new ScriptedLanguageModel({
      replies: [
        {
          text: 'I will write the module.',
          toolCalls: [
            call('file_editor', {
              command: 'create',
              path: file,
              file_text: 'export const sum = (a, b) => a - b;\n',
              security_risk: 'medium',
            }),
          ],
        },
        {
          toolCalls: [
            call('file_editor', {
              command: 'create',
              path: test,
              file_text:
                "import { sum } from './sum.js';\nif (sum(2, 3) !== 5) { console.error('FAIL: sum(2, 3) = ' + sum(2, 3)); process.exit(1); }\nconsole.log('PASS');\n",
            }),
          ],
        },
        {
          toolCalls: [
            call('terminal', {
              command: `cd ${fixture.workspace.root} && echo '{"type":"module"}' > package.json && node sum.test.js`,
            }),
          ],
        },
        {
          text: 'The test fails: sum subtracts.',
          toolCalls: [call('file_editor', { command: 'str_replace', path: file, old_str: 'a - b', new_str: 'a + b' })],
        },
        { toolCalls: [call('terminal', { command: 'node sum.test.js' })] },
        { toolCalls: [call('finish', { message: 'sum is fixed and its test passes.' })] },
      ],
    });
    const conversation = fixture.conversation(llm, { tools: ['terminal', 'file_editor', 'finish'] });
    await conversation.sendMessage('Write sum.js with a test, and make the test pass.', { run: true });
    expect(await conversation.run()).toBe('finished');
    expect(await readFile(file, 'utf8')).toBe('export const sum = (a, b) => a + b;\n');

    const events = await conversation.events();
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    const types = events.map((event) => event.type);
    expect(types[0]).toBe('message');
    expect(types.filter((type) => type === 'system_prompt')).toHaveLength(1);
    const actions = events.filter((event) => event.type === 'action');
    const observations = events.filter((event) => event.type === 'observation');
    expect(actions.map((action) => action.tool_name)).toEqual([
      'file_editor',
      'file_editor',
      'terminal',
      'file_editor',
      'terminal',
      'finish',
    ]);
    expect(observations.map((observation) => observation.tool_call_id)).toEqual(
      actions.map((action) => action.tool_call_id),
    );
    const terminalRuns = observations.filter((observation) => observation.tool_name === 'terminal');
    expect(text(terminalRuns[0]!)).toContain('FAIL: sum(2, 3) = -1');
    expect(terminalRuns[0]!.details).toMatchObject({ exit_code: 1 });
    expect(text(terminalRuns[1]!)).toContain('PASS');
    expect(terminalRuns[1]!.details).toMatchObject({ exit_code: 0 });
    // the terminal kept its cwd between calls (the second run has no cd)
    expect(actions[0]).toMatchObject({
      security_risk: 'medium',
      thought: [{ type: 'text', text: 'I will write the module.' }],
    });
    expect(events.filter((event) => event.type === 'execution_started')).toHaveLength(6);
    expect(events.filter((event) => event.type === 'llm_usage')).toHaveLength(6);
    expect(events.at(-1)).toMatchObject({ type: 'state_change', status: 'finished' });
    // the model saw the tool results: its 4th request carries the failing run
    const fourth = llm.requests[3]!.messages;
    expect(JSON.stringify(fourth.at(-1))).toContain('FAIL');
  });

  it('answers a bad tool name, invalid JSON and a schema violation with paired errors, and goes on', async () => {
    await using fixture = await conversationFixture();
    const llm = new ScriptedLanguageModel({
      replies: [
        { toolCalls: [call('no_such_tool', { x: 1 })] },
        { toolCalls: [call('terminal', '{"command": "ls"')] },
        { toolCalls: [call('terminal', { command: 42 })] },
        { toolCalls: [call('terminal', { command: 'echo recovered' })] },
        { text: 'Done: recovered from three mistakes.' },
      ],
    });
    // three invalid replies in a row end a run by default (limits.maxInvalidRepliesInRow): this one may recover after them
    const conversation = fixture.conversation(llm, {
      tools: ['terminal', 'finish'],
      limits: { maxInvalidRepliesInRow: 4 },
    });
    await conversation.sendMessage('Say something in the terminal.', { run: true });
    expect(await conversation.run()).toBe('finished');
    const events = await conversation.events();
    const errors = events.filter((event) => event.type === 'agent_error');
    expect(errors).toHaveLength(3);
    expect(errors[0]!.error).toMatch(/does not exist/);
    expect(errors[1]!.error).toMatch(/not valid JSON/);
    expect(errors[2]!.error).toMatch(/command/);
    const invalidActions = events.filter((event) => event.type === 'action' && event.input === null);
    expect(invalidActions.map((action) => action.type === 'action' && action.tool_call_id)).toEqual(
      errors.map((error) => error.tool_call_id),
    );
    // each error sits in the same commit as its action, right after it
    for (const error of errors) {
      const action = events.find((event) => event.type === 'action' && event.tool_call_id === error.tool_call_id)!;
      expect(error.seq).toBe(action.seq + 1);
      expect(error.action_id).toBe(action.id);
    }
    expect(text(events.find((event) => event.type === 'observation')!)).toContain('recovered');
    // the model read each error as the result of its call
    expect(JSON.stringify(llm.requests[1]!.messages.at(-1))).toMatch(/does not exist/);
    expect(events.at(-2)).toMatchObject({ type: 'message', role: 'assistant' });
  });

  it('ends the run with a clear error when the model fails for good, and on max iterations', async () => {
    await using fixture = await conversationFixture();
    const failing = fixture.conversation(
      new ScriptedLanguageModel({ replies: [new LlmError('auth', 'invalid API key')] }),
    );
    await failing.sendMessage('hi', { run: true });
    expect(await failing.run()).toBe('error');
    expect((await failing.events()).find((event) => event.type === 'conversation_error')).toMatchObject({
      code: 'llm_auth',
    });

    const looping = fixture.conversation(
      new ScriptedLanguageModel({
        replies: (_request, index) => ({ toolCalls: [call('think', { thought: `idea ${index}` })] }),
      }),
      { tools: ['think'], limits: { maxIterationsPerRun: 3 } },
    );
    await looping.sendMessage('think forever', { run: true });
    expect(await looping.run()).toBe('error');
    const events = await looping.events();
    expect(events.filter((event) => event.type === 'llm_usage')).toHaveLength(3);
    expect(events.find((event) => event.type === 'conversation_error')).toMatchObject({ code: 'max_iterations' });
  });

  it('runs a call whose id the model repeats from an earlier turn (under a fresh id), instead of hanging on it', async () => {
    await using fixture = await conversationFixture();
    const reused = { id: 'call_same', name: 'terminal' };
    const llm = new ScriptedLanguageModel({
      replies: [
        { toolCalls: [{ ...reused, arguments: JSON.stringify({ command: 'echo first' }) }] },
        { toolCalls: [{ ...reused, arguments: JSON.stringify({ command: 'echo second' }) }] },
        { text: 'both ran' },
      ],
    });
    const conversation = fixture.conversation(llm, { tools: ['terminal'] });
    await conversation.sendMessage('echo twice', { run: true });
    expect(await conversation.run()).toBe('finished');
    const events = await conversation.events();
    const actions = events.filter((event) => event.type === 'action');
    expect(actions.map((action) => action.tool_call_id)).toEqual(['call_same', expect.stringMatching(/^call_.+_0$/)]);
    const observations = events.filter((event) => event.type === 'observation');
    expect(observations.map((observation) => observation.tool_call_id)).toEqual(
      actions.map((action) => action.tool_call_id),
    );
    expect(text(observations[1]!)).toContain('second');
  });

  it('stops a run that repeats the same failing call as stuck', async () => {
    await using fixture = await conversationFixture();
    const llm = new ScriptedLanguageModel({
      replies: () => ({ toolCalls: [call('terminal', { command: 'cat missing-file' })] }),
    });
    const conversation = fixture.conversation(llm, { tools: ['terminal'] });
    await conversation.sendMessage('read the file', { run: true });
    expect(await conversation.run()).toBe('stuck');
    expect(llm.requests).toHaveLength(4);
    await conversation.sendMessage('try something else');
    expect(await conversation.status()).toBe('idle');
  });

  it('nudges an empty reply and waits for confirmation of risky actions', async () => {
    await using fixture = await conversationFixture();
    const llm = new ScriptedLanguageModel({
      replies: [
        {},
        { toolCalls: [call('terminal', { command: 'echo approved > out.txt', security_risk: 'high' })] },
        { text: 'written' },
      ],
    });
    const conversation = fixture.conversation(llm, {
      tools: ['terminal'],
      confirmation: { mode: 'risky', threshold: 'high' },
    });
    await conversation.sendMessage('write a file', { run: true });
    expect(await conversation.run()).toBe('waiting_for_confirmation');
    const waiting = await conversation.events();
    expect(waiting.some((event) => event.type === 'message' && event.source === 'environment')).toBe(true);
    expect(waiting.some((event) => event.type === 'observation')).toBe(false);
    expect(await conversation.run()).toBe('finished');
    const events = await conversation.events();
    expect(events.some((event) => event.type === 'approval')).toBe(true);
    expect(await readFile(join(fixture.workspace.root, 'out.txt'), 'utf8')).toBe('approved\n');
  });
});

describe('LocalConversation with a concurrent writer', () => {
  it('holds every event exactly once when another writer appends while it reads', async () => {
    await using fixture = await conversationFixture();
    const conversation = fixture.conversation(new ScriptedLanguageModel({ replies: [] }));
    const ref = conversation.ref;
    const other = async (index: number): Promise<void> => {
      await appendWithRetry(fixture.log, ref, () => [
        draftEvent({ ...ref, source: 'user' }, 'message', {
          role: 'user',
          content: [{ type: 'text', text: `from the other writer ${index}` }],
        }),
      ]);
    };
    await other(0);
    // the other writer appends right after this conversation fetched the tail, before it reads the events
    const tail = fixture.log.tail.bind(fixture.log);
    let injected = 0;
    fixture.log.tail = async (target) => {
      const seen = await tail(target);
      if (injected < 20) await other((injected += 1));
      return seen;
    };
    const reads = await Promise.all(Array.from({ length: 10 }, () => conversation.events()));
    for (let round = 0; round < 10; round += 1) await conversation.events();
    fixture.log.tail = tail;
    const events = await conversation.events();
    const logged = (await fixture.log.readEvents(ref)).events;
    expect(events.map((event) => event.id)).toEqual(logged.map((event) => event.id));
    expect(new Set(events.map((event) => event.id)).size).toBe(events.length);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(injected).toBe(20);
    expect(reads.every((read) => read.length > 0)).toBe(true);
  });
});
