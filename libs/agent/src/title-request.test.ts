import { draftEvent, type MessageEvent } from '@flotilla/events';
import { LlmError, ScriptedLanguageModel } from '@flotilla/llm';
import { describe, expect, it } from 'vitest';
import { titleOrFail } from './title-or-fail.js';
import {
  cleanTitle,
  MAX_TITLE_CHARS,
  TITLE_MESSAGE_CHARS,
  TITLE_SYSTEM_PROMPT,
  titleRequest,
} from './title-request.js';

const context = { tenant: 'acme', conversation: 'titled', source: 'system' as const };
const message = (text: string): MessageEvent =>
  ({
    ...draftEvent({ ...context, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text }] }),
    seq: 2,
  }) as MessageEvent;

describe('cleanTitle', () => {
  it('keeps one plain line: no label, quotes, markdown, control characters or trailing period', () => {
    expect(cleanTitle('Fix the flaky login test')).toBe('Fix the flaky login test');
    expect(cleanTitle('Title: "Fix the flaky login test".\n')).toBe('Fix the flaky login test');
    expect(cleanTitle('"Fix the flaky login test."')).toBe('Fix the flaky login test');
    expect(cleanTitle('**Fix the   flaky\tlogin test**')).toBe('Fix the flaky login test');
    expect(cleanTitle('# “Migrate to Node 20”')).toBe('Migrate to Node 20');
    expect(cleanTitle("\n\n  'Upgrade deps'  \nBecause the user asked to upgrade.")).toBe('Upgrade deps');
    expect(cleanTitle('Conversation title: `Speed up CI`')).toBe('Speed up CI');
    expect(cleanTitle('Fix\u0000 the\u200b build\u0007')).toBe('Fix the build');
    expect(cleanTitle('Wait for it...')).toBe('Wait for it...');
    expect(cleanTitle('Release v1.2')).toBe('Release v1.2');
  });

  it('gives nothing for a reply without text for a title', () => {
    expect(cleanTitle('')).toBeUndefined();
    expect(cleanTitle('  \n\n ""  \n')).toBeUndefined();
    expect(cleanTitle('Title:')).toBeUndefined();
  });

  it('caps a long title at the protocol’s 200 characters, at a word, never inside a character', () => {
    const long = cleanTitle(Array.from({ length: 80 }, (_, index) => `word${index}`).join(' '))!;
    expect(long.length).toBeLessThanOrEqual(MAX_TITLE_CHARS);
    expect(long).toMatch(/ word\d+…$/);
    const unbroken = cleanTitle('x'.repeat(500))!;
    expect(unbroken).toBe(`${'x'.repeat(MAX_TITLE_CHARS - 1)}…`);
    // an astral character (two UTF-16 units) at the cut is kept whole or dropped whole
    const emoji = cleanTitle(`${'y'.repeat(MAX_TITLE_CHARS - 2)}😀😀😀`)!;
    expect(emoji.length).toBeLessThanOrEqual(MAX_TITLE_CHARS);
    expect(emoji.endsWith('\ud83d…')).toBe(false);
    expect(() => encodeURIComponent(emoji)).not.toThrow();
  });
});

describe('titleRequest', () => {
  it('asks without tools, with the head of the first message as data', () => {
    const request = titleRequest(`Fix it. ${'z'.repeat(10_000)}`);
    expect(request.tools).toBeUndefined();
    expect(request.messages[0]).toMatchObject({ role: 'system', content: [{ text: TITLE_SYSTEM_PROMPT }] });
    const user = JSON.stringify(request.messages[1]);
    expect(user).toContain('<FIRST_MESSAGE>\\nFix it. zzz');
    expect(user).toContain(' […]\\n</FIRST_MESSAGE>');
    expect(user.length).toBeLessThan(TITLE_MESSAGE_CHARS + 200);
  });
});

describe('titleOrFail', () => {
  it('answers with the call’s usage (purpose other) and the cleaned title, in that order', async () => {
    const llm = new ScriptedLanguageModel({
      replies: [{ text: 'Title: "Fix the login test"', usage: { inputTokens: 40, outputTokens: 6 }, costUsd: 0.001 }],
    });
    const result = await titleOrFail(message('The login test fails one run in ten: fix it'), llm, context);
    expect(result.title).toBe('Fix the login test');
    expect(result.drafts).toMatchObject([
      {
        type: 'llm_usage',
        purpose: 'other',
        prompt_tokens: 40,
        completion_tokens: 6,
        cost_usd: 0.001,
        source: 'system',
      },
      {
        type: 'state_change',
        title: 'Fix the login test',
        reason: 'generated from the first message',
        source: 'system',
      },
    ]);
    expect(result.drafts[1]).not.toHaveProperty('status');
    expect(JSON.stringify(llm.requests[0]!.messages)).toContain('The login test fails one run in ten');
  });

  it('answers a failure after the model client’s last attempt, or a reply with no title, with title_failed and no status', async () => {
    const down = new ScriptedLanguageModel({ replies: [new LlmError('transient', 'The server is down.')] });
    const failed = await titleOrFail(message('Fix it'), down, context);
    expect(failed.title).toBeUndefined();
    expect(failed.drafts).toMatchObject([
      {
        type: 'conversation_error',
        code: 'title_failed',
        detail:
          'The title could not be generated (transient: The server is down); the conversation stays untitled until one is set.',
      },
    ]);
    const empty = await titleOrFail(
      message('Fix it'),
      new ScriptedLanguageModel({ replies: [{ text: '  ' }] }),
      context,
    );
    expect(empty.drafts.map((draft) => [draft.type, 'code' in draft ? draft.code : ''])).toEqual([
      ['llm_usage', ''],
      ['conversation_error', 'title_failed'],
    ]);
  });

  it('throws a cancelled call (a shutdown): nothing is recorded for it', async () => {
    const controller = new AbortController();
    const slow = new ScriptedLanguageModel({ replies: [{ text: 'Late' }], latencyMs: 10_000 });
    const call = titleOrFail(message('Fix it'), slow, context, controller.signal);
    controller.abort();
    await expect(call).rejects.toThrow();
  });
});
