import { describe, expect, it } from 'vitest';
import { readableTerminalText } from './terminal-text.js';

describe('readableTerminalText', () => {
  it('keeps what was written last on each line redrawn with carriage returns, and drops ANSI escapes', () => {
    expect(
      readableTerminalText('start\nprogress 10%\rprogress 50%\rprogress 100%\r\n\x1b[32mgreen\x1b[0m\nend\r'),
    ).toBe('start\nprogress 100%\ngreen\nend');
    expect(readableTerminalText('a\rb\nc\nd\re\rf')).toBe('b\nc\nf');
  });

  it('cleans 10 MB of redrawn lines in linear time, as it cleans one', () => {
    const line = 'progress 50%\rprogress 100%\n';
    const text = line.repeat(Math.ceil(10_000_000 / line.length));
    const started = Date.now();
    const readable = readableTerminalText(text);
    const elapsed = Date.now() - started;
    expect(readable).toBe('progress 100%\n'.repeat(Math.ceil(10_000_000 / line.length)));
    // generous: a quadratic pass over 10 MB takes minutes
    expect(elapsed).toBeLessThan(5_000);
  });

  it('reports binary output with how much was printed in all', () => {
    const binary = Buffer.from(Array.from({ length: 4_000 }, (_, index) => (index * 37) % 256)).toString('utf8');
    expect(readableTerminalText(binary, 100_000_000)).toMatch(
      /^\[The command printed 100,000,000 characters of binary \(non-UTF-8\) data, which is not shown\./,
    );
    expect(readableTerminalText(`tab\tand a bell\x07${'.'.repeat(100)}`)).toBe(`tab\tand a bell?${'.'.repeat(100)}`);
  });
});
