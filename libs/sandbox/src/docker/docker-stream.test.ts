import { PassThrough, type Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { demultiplex, SpawnReportFilter, stdinOf } from './docker-stream.js';
import { PID_MARKER } from './spawn-script.js';

function frame(stream: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

function collect(readable: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    readable.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    readable.on('end', () => resolve(text));
  });
}

describe('demultiplex', () => {
  it('routes frames to stdout and stderr, across chunk boundaries, and ends both', async () => {
    const source = new PassThrough();
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    demultiplex(source, stdout, stderr);
    const out = collect(stdout);
    const err = collect(stderr);
    const bytes = Buffer.concat([frame(1, 'hello '), frame(2, 'oops'), frame(1, 'world'), frame(2, '!')]);
    // one byte at a time: headers and payloads split everywhere
    for (const byte of bytes) source.write(Buffer.from([byte]));
    source.end();
    expect(await out).toBe('hello world');
    expect(await err).toBe('oops!');
  });

  it('passes a stream that is not multiplexed to stdout as it is', async () => {
    const source = new PassThrough();
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    demultiplex(source, stdout, stderr);
    const out = collect(stdout);
    const err = collect(stderr);
    source.end('plain text, no frames\n');
    expect(await out).toBe('plain text, no frames\n');
    expect(await err).toBe('');
  });

  it('pauses the source while a reader falls behind and resumes when it drains', async () => {
    const source = new PassThrough();
    const stdout = new PassThrough({ highWaterMark: 16 });
    const stderr = new PassThrough();
    demultiplex(source, stdout, stderr);
    source.write(frame(1, 'x'.repeat(64)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(source.isPaused()).toBe(true);
    const out = collect(stdout);
    source.end(frame(1, 'tail'));
    expect(await out).toBe(`${'x'.repeat(64)}tail`);
  });
});

describe('SpawnReportFilter', () => {
  it('takes the reported pid off the first line and passes the rest', async () => {
    const filter = new SpawnReportFilter();
    const text = collect(filter);
    filter.write(Buffer.from(PID_MARKER.slice(0, 5), 'latin1'));
    filter.write(Buffer.from(`${PID_MARKER.slice(5)}42\nfirst error line\n`, 'latin1'));
    filter.end('second\n');
    expect(await filter.pid).toBe(42);
    expect(await text).toBe('first error line\nsecond\n');
  });

  it('passes stderr untouched when the wrapper did not report', async () => {
    const filter = new SpawnReportFilter();
    const text = collect(filter);
    filter.end('sh: not found\n');
    expect(await filter.pid).toBeUndefined();
    expect(await text).toBe('sh: not found\n');
  });

  it('gives up on a marker without its newline after a few bytes', async () => {
    const filter = new SpawnReportFilter();
    const text = collect(filter);
    const forged = `${PID_MARKER}${'9'.repeat(40)}`;
    filter.end(Buffer.from(forged, 'latin1'));
    expect(await filter.pid).toBeUndefined();
    expect(await text).toBe(forged);
  });
});

describe('stdinOf', () => {
  it('writes through and half-closes the connection on end', async () => {
    const written: string[] = [];
    let ended = false;
    const connection = new PassThrough();
    connection.on('data', (chunk: Buffer) => written.push(chunk.toString('utf8')));
    connection.on('finish', () => (ended = true));
    const stdin = stdinOf(connection);
    stdin.write('echo hi\n');
    await new Promise<void>((resolve) => stdin.end('exit\n', resolve));
    expect(written.join('')).toBe('echo hi\nexit\n');
    expect(ended).toBe(true);
  });

  it('drops writes once the connection is gone, as a closed pipe would', async () => {
    const connection = new PassThrough();
    connection.destroy();
    const stdin: Writable = stdinOf(connection);
    await new Promise<void>((resolve, reject) => stdin.write('late\n', (error) => (error ? reject(error) : resolve())));
  });
});
