import { FLOTILLA_VERSION, type Conversation } from '@flotilla/api';
import { FlotillaApiError } from '@flotilla/client';
import { CURRENT_PROTOCOL_VERSION } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import type { CliClient } from './cli-client.js';
import type { Connection } from './connection.js';
import { renderConversationTable } from './format-resources.js';
import { runCli } from './run-cli.js';
import { Captured } from './test-support/fake-stream.js';
import { USAGE } from './usage.js';

const conversation = (id: string, overrides: Partial<Conversation> = {}): Conversation => ({
  id,
  status: 'finished',
  title: null,
  tags: [],
  created_at: '2026-11-29T20:00:00.000Z',
  updated_at: '2026-11-29T21:00:00.000Z',
  last_seq: 12,
  counters: {
    events: 12,
    user_messages: 1,
    agent_messages: 1,
    actions: 2,
    observations: 2,
    agent_errors: 0,
    rejections: 0,
    condensations: 0,
    llm_calls: 3,
  },
  usage: {
    prompt_tokens: 300,
    completion_tokens: 60,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    reasoning_tokens: 0,
    cost_usd: 0,
  },
  last_error: null,
  agent: { model: 'gpt-test', template: null, spec_seq: 2 },
  branch: { forked_from: null, abandoned: [] },
  run_started: { seq: 3, at: '2026-11-29T20:00:01.000Z' },
  queue: null,
  ...overrides,
});

async function run(
  argv: string[],
  client: Partial<CliClient> = {},
  env: Record<string, string> = { FLOTILLA_URL: 'http://gw:1', FLOTILLA_API_KEY: 'k' },
) {
  const stdout = new Captured();
  const stderr = new Captured();
  const connections: Connection[] = [];
  const code = await runCli(argv, {
    stdout,
    stderr,
    env,
    readConfig: () => undefined,
    createClient: (connection) => {
      connections.push(connection);
      return client as CliClient;
    },
    now: () => new Date('2026-11-29T21:05:00.000Z'),
  });
  return { code, stdout: stdout.text, stderr: stderr.text, connections };
}

describe('runCli', () => {
  it('sends --image files with the message, base64 with the format read from their bytes and their names; a file that is no image is named, nothing sent', async () => {
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('pixels')]);
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
    const files: Record<string, Buffer> = {
      'shots/screen.png': png,
      'photo.jpg': jpeg,
      'notes.txt': Buffer.from('hello'),
    };
    const sent: unknown[] = [];
    const client: Partial<CliClient> = {
      sendMessage: async (id, text, options) => {
        sent.push({ id, text, ...options });
        return { conversation: id, status: 'running', last_seq: 4, appended: true };
      },
    };
    const input = {
      readStdin: async () => '',
      readFile: async () => '',
      readBytes: async (path: string) => files[path] ?? Promise.reject(new Error('no such file')),
    };
    const runWith = (argv: string[]) =>
      runCli(argv, {
        stdout: new Captured(),
        stderr: new Captured(),
        env: { FLOTILLA_URL: 'http://gw:1', FLOTILLA_API_KEY: 'k' },
        readConfig: () => undefined,
        createClient: () => client as CliClient,
        now: () => new Date(),
        input,
      });
    expect(
      await runWith([
        'send',
        'c1',
        'what is wrong here?',
        '--image',
        'shots/screen.png',
        '--image',
        'photo.jpg',
        '--run',
      ]),
    ).toBe(0);
    expect(sent).toEqual([
      {
        id: 'c1',
        text: 'what is wrong here?',
        run: true,
        images: [
          { data: png.toString('base64'), media_type: 'image/png', name: 'screen.png' },
          { data: jpeg.toString('base64'), media_type: 'image/jpeg', name: 'photo.jpg' },
        ],
      },
    ]);
    const stderr = new Captured();
    expect(
      await runCli(['send', 'c1', '--image', 'notes.txt'], {
        stdout: new Captured(),
        stderr,
        env: { FLOTILLA_URL: 'http://gw:1', FLOTILLA_API_KEY: 'k' },
        readConfig: () => undefined,
        createClient: () => client as CliClient,
        now: () => new Date(),
        input,
      }),
    ).toBe(2);
    expect(stderr.text).toContain('--image notes.txt: not a png, jpeg, gif or webp image');
    expect(sent).toHaveLength(1);
  });

  it('prints the usage for --help, without needing a gateway', async () => {
    expect(await run(['--help'], {}, {})).toMatchObject({ code: 0, stdout: USAGE, stderr: '' });
  });

  it("prints one command's usage for `<command> --help` and `help <command>`, with the shared options", async () => {
    for (const argv of [
      ['send', '--help'],
      ['help', 'send'],
      ['send', 'x', '-h'],
    ]) {
      const { code, stdout } = await run(argv, {}, {});
      expect(code).toBe(0);
      expect(stdout).toMatch(/^Usage: flotilla send …\n\n  send ID TEXT \[--image FILE\]\.\.\. \[--run\] \[--watch\]/);
      expect(stdout).not.toContain('approve ID');
      expect(stdout).toContain('--api-key KEY');
    }
    // an entry that continues on the next lines keeps them; one word can start several entries
    expect((await run(['secret', '--help'], {}, {})).stdout).toContain(
      'secret set|rm|ls --tenant [NAME] the same for your tenant',
    );
    expect((await run(['create', '--help'], {}, {})).stdout).toContain('[--template NAME] [--spec FILE]');
    // a tap reads NATS, not the gateway: its help lists what it takes, not --url and --api-key
    const tap = (await run(['tap', '--help'], {}, {})).stdout;
    expect(tap).toMatch(/^Usage: flotilla tap …\n\n  tap \[--tenant T\]/);
    expect(tap).toContain('FLOTILLA_NATS_URL');
    expect(tap).toContain('.flotilla/tap.json');
    expect(tap).not.toMatch(/--url|--api-key|FLOTILLA_API_KEY|cli\.json/);
    expect(tap).toContain('Exit status:');
    const unknown = await run(['help', 'launch'], {}, {});
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^flotilla: unknown command "launch"/);
  });

  it('forks, rewinds and asks through the client, checking their arguments first', async () => {
    const calls: unknown[] = [];
    const client: Partial<CliClient> = {
      forkConversation: async (id, body) => (
        calls.push(['fork', id, body]),
        { conversation: conversation('child-1'), created: true }
      ),
      rewind: async (id, body) => (
        calls.push(['rewind', id, body]),
        { conversation: id, status: 'idle', last_seq: 20, appended: true }
      ),
      ask: async (id, question) => (
        calls.push(['ask', id, question]),
        {
          answer: 'two files are left',
          model: 'gpt-test',
          usage: {
            prompt_tokens: 10,
            completion_tokens: 4,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
            cost_usd: 0,
          },
        }
      ),
    };
    expect(
      await run(['fork', 'parent', '--at-seq', '7', '--id', 'child-1', '--message', 'go on', '--run'], client),
    ).toMatchObject({ code: 0, stdout: 'child-1\n' });
    expect(await run(['rewind', 'parent', '--to-seq', '5', '--reason', 'other way'], client)).toMatchObject({
      code: 0,
      stdout: 'rewound parent to event 5 (now idle)\n',
    });
    expect(await run(['ask', 'parent', 'what', 'is', 'left?'], client)).toMatchObject({
      code: 0,
      stdout: 'two files are left\n',
    });
    expect(calls).toEqual([
      ['fork', 'parent', { id: 'child-1', at_seq: 7, message: 'go on', run: true }],
      ['rewind', 'parent', { to_seq: 5, reason: 'other way' }],
      ['ask', 'parent', 'what is left?'],
    ]);
    expect(await run(['rewind', 'parent'], client)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('rewind needs --to-seq N'),
    });
    expect(await run(['fork', 'parent', '--at-seq', 'zero'], client)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--at-seq must be a whole number'),
    });
    expect(await run(['fork', 'parent', '--run'], client)).toMatchObject({ code: 2 });
    expect(await run(['ask', 'parent'], client)).toMatchObject({ code: 2 });
    expect(calls).toHaveLength(3);
  });

  it('prints its version for --version and -V, without needing a gateway', async () => {
    for (const argv of [['--version'], ['-V'], ['list', '--version']]) {
      expect(await run(argv, {}, {})).toMatchObject({
        code: 0,
        stdout: `flotilla ${FLOTILLA_VERSION} (API v1, protocol ${CURRENT_PROTOCOL_VERSION})\n`,
        stderr: '',
      });
    }
  });

  it('exits 2 with a short usage on a usage error', async () => {
    const { code, stdout, stderr } = await run(['watch']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^flotilla: watch needs the conversation ID.*\nUsage: flotilla <command> \[options\]/);
    expect(stderr.split('\n').length).toBeLessThan(5);
  });

  it('exits 2 when no gateway is configured', async () => {
    const { code, stderr } = await run(['list'], {}, {});
    expect(code).toBe(2);
    expect(stderr).toContain('no gateway URL');
  });

  it('prints error: <code>: <message> and exits 1 when the gateway refuses', async () => {
    const client: Partial<CliClient> = {
      getConversation: () =>
        Promise.reject(new FlotillaApiError(404, 'conversation_not_found', 'No conversation "nope".')),
      createConversation: () =>
        Promise.reject(
          new FlotillaApiError(400, 'validation_failed', 'body.title: too long', [
            { path: 'body.title', message: 'too long' },
          ]),
        ),
    };
    expect(await run(['get', 'nope'], client)).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'error: conversation_not_found: No conversation "nope".\n',
    });
    expect(await run(['watch', 'nope'], client)).toMatchObject({
      code: 1,
      stderr: 'error: conversation_not_found: No conversation "nope".\n',
    });
    expect((await run(['create', '--title', 'x'], client)).stderr).toBe(
      'error: validation_failed: body.title: too long\n  body.title: too long\n',
    );
  });

  it('creates a conversation and prints its id; flags override the environment', async () => {
    const bodies: unknown[] = [];
    const client: Partial<CliClient> = {
      createConversation: (body = {}) => {
        bodies.push(body);
        return Promise.resolve({ conversation: conversation(body.id ?? 'generated'), created: true });
      },
    };
    const result = await run(
      ['create', '--id', 'c1', '--tag', 'a', '--message', 'go', '--run', '--url', 'http://other:2'],
      client,
    );
    expect(result).toMatchObject({ code: 0, stdout: 'c1\n', stderr: '' });
    expect(bodies).toEqual([{ id: 'c1', tags: ['a'], message: 'go', run: true }]);
    expect(result.connections).toEqual([{ url: 'http://other:2', apiKey: 'k' }]);
  });

  it('reports what a command did, or that there was nothing to do', async () => {
    const client: Partial<CliClient> = {
      approve: () => Promise.resolve({ conversation: 'c1', status: 'running', last_seq: 9, appended: true }),
      pause: () => Promise.resolve({ conversation: 'c1', status: 'finished', last_seq: 9, appended: false }),
    };
    expect((await run(['approve', 'c1'], client)).stdout).toBe('approved c1 (status running, seq 9)\n');
    expect((await run(['pause', 'c1'], client)).stdout).toBe(
      'pause requested for c1: nothing to do (status finished)\n',
    );
  });

  it('lists conversations as a table or as JSON', async () => {
    const items = [
      conversation('c1', { title: 'Fix CI' }),
      conversation('c2', { status: 'running', updated_at: '2026-11-29T21:04:30.000Z' }),
    ];
    const queries: unknown[] = [];
    const client: Partial<CliClient> = {
      listConversations: (query) => {
        queries.push(query);
        return Promise.resolve({ items, next_cursor: null });
      },
    };
    const table = await run(['list', '--status', 'finished', '--limit', '2'], client);
    expect(queries).toEqual([{ status: 'finished', limit: 2 }]);
    expect(table.stdout.split('\n').slice(0, -1)).toEqual([
      'ID  STATUS    TITLE   UPDATED  EVENTS',
      'c1  finished  Fix CI  5m ago   12',
      'c2  running   -       30s ago  12',
    ]);
    expect(JSON.parse((await run(['list', '--json'], client)).stdout)).toEqual(items);
    expect(renderConversationTable([], new Date())).toEqual(['no conversations']);
  });

  it('prints a new API key alone on stdout', async () => {
    const client: Partial<CliClient> = {
      createApiKey: (tenant, name) => Promise.resolve({ tenant, name, api_key: 'secret-key' }),
    };
    const result = await run(['keys', 'create', '--tenant', 'acme', '--name', 'ci'], client);
    expect(result).toMatchObject({ code: 0, stdout: 'secret-key\n' });
    expect(result.stderr).toContain('shown only this once');
  });
});
