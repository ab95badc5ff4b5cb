import { describe, expect, it } from 'vitest';
import { buildView } from '@flotilla/view';
import { shorten } from './render-items.js';
import {
  SUMMARY_PREAMBLE,
  SUMMARY_SECTIONS,
  SUMMARY_SYSTEM_PROMPT,
  summaryRequest,
  summaryUserPrompt,
} from './summary-prompt.js';
import { TestLog } from './test-support/test-log.js';

describe('shorten', () => {
  it('keeps short texts and cuts long ones in the middle, keeping both ends', () => {
    expect(shorten('abc', 10)).toBe('abc');
    const text = `BEGIN${'x'.repeat(5_000)}END`;
    const cut = shorten(text, 1_000);
    expect(cut.length).toBeLessThanOrEqual(1_000);
    expect(cut.startsWith('BEGIN')).toBe(true);
    expect(cut.endsWith('END')).toBe(true);
    expect(cut).toContain('characters omitted');
  });
});

describe('summaryRequest', () => {
  const log = new TestLog();
  log.system();
  log.user('please fix src/app.ts');
  log.batch({ size: 2, thought: 'look around', output: `TOP${'y'.repeat(3_000)}BOTTOM` });
  const items = buildView(log.events).items.slice(1);
  const previous = {
    type: 'condensation_summary' as const,
    id: 'c0',
    summary: `${SUMMARY_PREAMBLE}\n\nUSER_CONTEXT: earlier facts`,
  };

  it('asks for every section in a system prompt, with no tools', () => {
    const request = summaryRequest({ forgotten: items, maxEventChars: 10_000, scale: 1, maxOutputTokens: 777 });
    expect(request.messages.map((message) => message.role)).toEqual(['system', 'user']);
    for (const section of SUMMARY_SECTIONS) expect(SUMMARY_SYSTEM_PROMPT).toContain(`${section}:`);
    expect(request.tools).toBeUndefined();
    expect(request.maxOutputTokens).toBe(777);
  });

  it('shows the previous summary apart from the events, without its preamble', () => {
    const prompt = summaryUserPrompt({
      forgotten: [previous, ...items],
      maxEventChars: 10_000,
      scale: 1,
      maxOutputTokens: 100,
    });
    expect(prompt).toMatch(/<PREVIOUS_SUMMARY>\nUSER_CONTEXT: earlier facts\n<\/PREVIOUS_SUMMARY>/);
    expect(prompt).not.toContain(SUMMARY_PREAMBLE);
    expect(prompt).toContain('[1] USER: please fix src/app.ts');
    expect(prompt).toContain('ASSISTANT: look around');
    expect(prompt).toContain('ASSISTANT called terminal');
    expect(prompt).toContain('RESULT of terminal');
  });

  it('cuts each event to maxEventChars, and 20% shorter per scale step', () => {
    const prompt = (scale: number, maxEventChars = 10_000) =>
      summaryUserPrompt({ forgotten: items, maxEventChars, scale, maxOutputTokens: 100 });
    expect(prompt(1)).not.toContain('omitted');
    expect(prompt(1, 1_000).length).toBeLessThan(prompt(1).length - 3_000);
    expect(prompt(0.8).length).toBeLessThan(prompt(1).length * 0.85);
    expect(prompt(0.8)).toContain('TOP');
    expect(prompt(0.8)).toContain('BOTTOM');
  });
});
