import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundOutput } from './output-bounds.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'flotilla-bounds-test-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('boundOutput', () => {
  it('leaves short text alone', async () => {
    expect(await boundOutput('short', { toolName: 't', outputDir: dir })).toEqual({ text: 'short', truncated: false });
  });

  it('keeps head and tail, saves the full text and names the first omitted line', async () => {
    const text = Array.from({ length: 10_000 }, (_, index) => `line ${index + 1}`).join('\n');
    const bounded = await boundOutput(text, { toolName: 'terminal', outputDir: dir, limit: 3_000 });
    expect(bounded.truncated).toBe(true);
    expect(bounded.text.length).toBeLessThanOrEqual(3_000);
    expect(bounded.text.startsWith('line 1\nline 2\n')).toBe(true);
    expect(bounded.text.endsWith('line 10000')).toBe(true);
    expect(path.basename(bounded.savedPath ?? '')).toMatch(/^terminal_output_[0-9a-f]{8}\.txt$/);
    expect(await readFile(bounded.savedPath ?? '', 'utf8')).toBe(text);
    const firstOmitted = Number(/starts at line (\d+)/.exec(bounded.text)?.[1]);
    const headLines = bounded.text.slice(0, bounded.text.indexOf('<response clipped')).trimEnd().split('\n');
    expect(headLines[headLines.length - 1]).toBe(`line ${firstOmitted - 1}`);
  });

  it('names the byte where the omitted part starts, so a line too long for sed can be read in pieces', async () => {
    const text = `é${'a'.repeat(50_000)}`;
    const bounded = await boundOutput(text, { toolName: 'terminal', outputDir: dir, limit: 3_000 });
    const byte = Number(/\(byte (\d+)\)/.exec(bounded.text)?.[1]);
    const head = bounded.text.slice(0, bounded.text.indexOf('\n\n<response clipped'));
    const saved = await readFile(bounded.savedPath ?? '');
    expect(saved.subarray(byte - 1).toString('utf8')).toBe(text.slice(head.length));
    expect(bounded.text).toContain(`\`tail -c +${byte} ${bounded.savedPath} | head -c 20000\``);
    expect(bounded.text).toContain(
      '<response clipped: the output was 50,001 characters; the middle was omitted here. The full output (1 lines) was saved to',
    );
  });

  it('gives the total of an output whose middle was dropped before, and says the saved file holds only what was kept', async () => {
    const bounded = await boundOutput('x'.repeat(10_000), {
      toolName: 'terminal',
      outputDir: dir,
      limit: 3_000,
      totalCharacters: 100_000_123,
    });
    expect(bounded.text.length).toBeLessThanOrEqual(3_000);
    expect(bounded.text).toContain(
      '<response clipped: the output was about 100,000,000 characters; the middle was omitted here. Only its first and last parts were kept',
    );
  });

  it('never exceeds the limit', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 0, maxLength: 5_000 }),
        fc.integer({ min: 800, max: 4_000 }),
        async (text, limit) => {
          const bounded = await boundOutput(text, { toolName: 'p', limit });
          expect(bounded.text.length).toBeLessThanOrEqual(Math.max(limit, text.length <= limit ? text.length : 0));
        },
      ),
      { numRuns: 50 },
    );
  });
});
