import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseCliArgs } from './args.js';
import type { CliClient } from './cli-client.js';
import { runCli } from './run-cli.js';
import { readStdinText } from './stdin-value.js';
import { Captured } from './test-support/fake-stream.js';

const FLOTILLA = fileURLToPath(new URL('../bin/flotilla', import.meta.url));

describe('flotilla send ID - (the message from standard input)', () => {
  it('parses TEXT "-" as "read standard input", and only a lone "-"', () => {
    expect(parseCliArgs(['send', 'c1', '-']).command).toEqual({
      name: 'send',
      id: 'c1',
      text: '',
      textFromStdin: true,
      images: [],
      run: false,
    });
    expect(parseCliArgs(['send', 'c1', '-', 'x']).command).toEqual({
      name: 'send',
      id: 'c1',
      text: '- x',
      images: [],
      run: false,
    });
    expect(parseCliArgs(['send', 'c1', 'a - b']).command).toEqual({
      name: 'send',
      id: 'c1',
      text: 'a - b',
      images: [],
      run: false,
    });
  });

  it('sends what standard input holds, and refuses an empty one (exit 2) without sending', async () => {
    const sent: { id: string; text: string }[] = [];
    const client: Partial<CliClient> = {
      sendMessage: async (id, text) => {
        sent.push({ id, text });
        return { conversation: id, status: 'idle', last_seq: 4, appended: true };
      },
    };
    const runWith = async (argv: string[], stdinText: string) => {
      const stderr = new Captured();
      const input = {
        readStdin: async () => Promise.reject(new Error('not this reader')),
        readStdinText: async () => stdinText,
        readFile: async () => '',
      };
      const code = await runCli(argv, {
        stdout: new Captured(),
        stderr,
        env: { FLOTILLA_URL: 'http://gw:1', FLOTILLA_API_KEY: 'k' },
        readConfig: () => undefined,
        createClient: () => client as CliClient,
        now: () => new Date(),
        input,
      });
      return { code, stderr: stderr.text };
    };
    expect(await runWith(['send', 'c1', '-'], 'line one\nline - two')).toMatchObject({ code: 0 });
    expect(sent).toEqual([{ id: 'c1', text: 'line one\nline - two' }]);
    const empty = await runWith(['send', 'c1', '-'], ' \n');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('send: standard input was empty: nothing to send');
    expect(sent).toHaveLength(1);
  });

  it('readStdinText reads to the end, drops one final line break, and hints only on a terminal', async () => {
    const pipe = new PassThrough();
    const hints: string[] = [];
    const reading = readStdinText(pipe, { write: (text: string) => hints.push(text) }, 'hint\n');
    pipe.write('päss ');
    pipe.end('wörd\n\n');
    expect(await reading).toBe('päss wörd\n');
    expect(hints).toEqual([]);
    const terminal = Object.assign(new PassThrough(), { isTTY: true });
    const typed = readStdinText(terminal, { write: (text: string) => hints.push(text) }, 'hint\n');
    terminal.end('typed\r\n');
    expect(await typed).toBe('typed');
    expect(hints).toEqual(['hint\n']);
  });

  it('the real executable sends piped standard input to the gateway', async () => {
    const bodies: unknown[] = [];
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        bodies.push({ method: request.method, url: request.url, body: JSON.parse(body || 'null') as unknown });
        response
          .writeHead(202, { 'content-type': 'application/json' })
          .end(JSON.stringify({ conversation: 'c1', status: 'idle', last_seq: 4, appended: true }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const child = spawn(FLOTILLA, ['send', 'c1', '-'], {
        env: { ...process.env, FLOTILLA_URL: url, FLOTILLA_API_KEY: 'k' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.stdin.end('from a pipe\nsecond line\n');
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(code, stderr).toBe(0);
      expect(bodies).toEqual([
        {
          method: 'POST',
          url: '/v1/conversations/c1/messages',
          body: { text: 'from a pipe\nsecond line', run: false },
        },
      ]);
    } finally {
      server.close();
    }
  }, 30_000);
});
