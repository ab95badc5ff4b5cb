import { describe, expect, it } from 'vitest';
import { OutputBuffer } from './output-buffer.js';

const MARKER = '__FLOTILLA_DONE_0123456789ab__';
const done = (code: number, cwd: string): Buffer => Buffer.from(`\n${MARKER} ${code} ${cwd}\n`);

describe('OutputBuffer', () => {
  it('keeps the head and the tail of 100 MB printed in 64 KiB chunks, within its capacity, and counts what it dropped', () => {
    const capacity = 1_000_000;
    const buffer = new OutputBuffer(MARKER, capacity);
    const chunks = 1_526; // 100 MB
    let most = 0;
    for (let index = 0; index < chunks; index += 1) {
      buffer.append(Buffer.alloc(65_536, index === 0 ? 'h' : index === chunks - 1 ? 't' : 'm'));
      most = Math.max(most, buffer.size);
    }
    buffer.append(done(0, '/workspace'));
    expect(most).toBeLessThanOrEqual(capacity);
    const taken = buffer.take();
    expect(taken.marker).toEqual({ exitCode: 0, cwd: '/workspace' });
    expect(taken.dropped).toBe(chunks * 65_536 - capacity);
    expect(taken.text.startsWith('h'.repeat(65_536) + 'm')).toBe(true);
    expect(taken.text).toContain(
      `\n[... ${(chunks * 65_536 - capacity).toLocaleString('en-US')} bytes of output were dropped here ...]\n`,
    );
    expect(taken.text.endsWith('m' + 't'.repeat(65_536))).toBe(true);
    expect(taken.text.length).toBeLessThan(capacity + 100);
  });

  it('finds a marker that arrives a byte at a time, and keeps what follows it for the next observation', () => {
    const buffer = new OutputBuffer(MARKER, 10_000);
    for (const byte of Buffer.from(`out\n${MARKER} 3 /work space\nnext`)) buffer.append(Buffer.from([byte]));
    expect(buffer.take()).toEqual({ text: 'out', dropped: 0, marker: { exitCode: 3, cwd: '/work space' } });
    expect(buffer.take()).toEqual({ text: 'next', dropped: 0, marker: undefined });
  });

  it('finds a marker split across the end of the kept head', () => {
    const buffer = new OutputBuffer(MARKER, 10_000);
    const line = Buffer.concat([Buffer.alloc(4_990, 'a'), done(1, '/w')]);
    buffer.append(line.subarray(0, 5_010));
    buffer.append(line.subarray(5_010));
    expect(buffer.take()).toEqual({ text: 'a'.repeat(4_990), dropped: 0, marker: { exitCode: 1, cwd: '/w' } });
  });

  it('ignores text that only looks like the start of a marker', () => {
    const buffer = new OutputBuffer(MARKER, 10_000);
    buffer.append(Buffer.from(`${MARKER} not-a-code\n`));
    buffer.append(done(0, '/w'));
    expect(buffer.take()).toEqual({ text: `${MARKER} not-a-code\n`, dropped: 0, marker: { exitCode: 0, cwd: '/w' } });
  });

  it('carries a character split between two observations over to the second', () => {
    const buffer = new OutputBuffer(MARKER, 10_000);
    const accent = Buffer.from('é');
    buffer.append(Buffer.concat([Buffer.from('caf'), accent.subarray(0, 1)]));
    expect(buffer.take().text).toBe('caf');
    buffer.append(Buffer.concat([accent.subarray(1), done(0, '/w')]));
    expect(buffer.take().text).toBe('é');
  });

  it('joins a trickle of one-byte chunks into few pieces, in order, bounded like any output', () => {
    const buffer = new OutputBuffer(MARKER, 100_000);
    for (let index = 0; index < 300_000; index += 1) buffer.append(Buffer.from(index % 100_000 === 0 ? '|' : 'x'));
    expect(buffer.size).toBeLessThanOrEqual(100_000 + 65_536);
    buffer.append(done(0, '/w'));
    const taken = buffer.take();
    expect(taken.text.startsWith('|x')).toBe(true);
    expect(taken.dropped).toBeGreaterThanOrEqual(300_000 - 100_000 - 65_536);
    expect(taken.text.endsWith('x'.repeat(1_000))).toBe(true);
  });
});
