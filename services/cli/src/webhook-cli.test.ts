import type { CreatedWebhook, CreateWebhookBody, DeadLetter, Webhook } from '@flotilla/api';
import { FlotillaApiError } from '@flotilla/client';
import { describe, expect, it } from 'vitest';
import { parseCliArgs } from './args.js';
import type { CliClient } from './cli-client.js';
import { CliError } from './errors.js';
import { runCli } from './run-cli.js';
import { Captured } from './test-support/fake-stream.js';

const ID = `wh_${'ab'.repeat(16)}`;
const command = (...argv: string[]) => parseCliArgs(argv).command;
function usageMessage(...argv: string[]): string {
  try {
    parseCliArgs(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    return (error as CliError).message;
  }
  throw new Error(`parsed: ${argv.join(' ')}`);
}

const webhook: Webhook = {
  id: ID,
  url: 'https://hooks.example.com/flotilla',
  events: ['conversation.finished', 'conversation.confirmation_pending'],
  description: null,
  created_at: '2026-01-01T00:00:00.000Z',
};
const letter: DeadLetter = {
  webhook: ID,
  event: {
    v: 1,
    id: `evt_${'1'.repeat(32)}`,
    type: 'conversation.finished',
    created_at: '2026-01-01T00:00:00.000Z',
    tenant: 'acme',
    data: { conversation: 'c1', seq: 9, status: 'finished', previous_status: 'running' },
  },
  attempts: 12,
  enqueued_at: '2026-01-01T00:00:00.000Z',
  last_attempt_at: '2026-01-01T02:41:00.000Z',
  last_error: 'HTTP 502',
  last_status: 502,
};

/** A client that records the webhook calls it gets, answering as a gateway would. */
function recordingClient(calls: unknown[][]): Partial<CliClient> {
  return {
    createWebhook: async (body: CreateWebhookBody): Promise<CreatedWebhook> => {
      calls.push(['createWebhook', body]);
      return {
        ...webhook,
        url: body.url,
        events: body.events,
        description: body.description ?? null,
        secret: 'whsec_shown-once',
      };
    },
    listWebhooks: async () => {
      calls.push(['listWebhooks']);
      return [webhook];
    },
    removeWebhook: async (id: string) => {
      calls.push(['removeWebhook', id]);
      if (id !== ID) throw new FlotillaApiError(404, 'webhook_not_found', `No webhook "${id}".`);
    },
    listWebhookDeadLetters: async (id: string, options?: { limit?: number }) => {
      calls.push(['listWebhookDeadLetters', id, options]);
      return [letter];
    },
  };
}

async function run(argv: string[], client: Partial<CliClient>) {
  const stdout = new Captured();
  const stderr = new Captured();
  const code = await runCli(argv, {
    stdout,
    stderr,
    env: { FLOTILLA_URL: 'http://gw:1', FLOTILLA_API_KEY: 'k' },
    readConfig: () => undefined,
    createClient: () => client as CliClient,
    now: () => new Date('2026-01-01T00:05:00.000Z'),
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('parsing webhook commands', () => {
  it('reads add with kinds by full or short name, repeated or comma-separated, list, rm and dead', () => {
    expect(
      command(
        'webhook',
        'add',
        'https://hooks.example.com/x',
        '--event',
        'finished,confirmation_pending',
        '--event',
        'conversation.finished',
        '--description',
        'ci',
      ),
    ).toEqual({
      name: 'webhook-add',
      url: 'https://hooks.example.com/x',
      events: ['conversation.finished', 'conversation.confirmation_pending'],
      description: 'ci',
      json: false,
    });
    expect(command('webhook', 'list', '--json')).toEqual({ name: 'webhook-list', json: true });
    expect(command('webhook', 'rm', ID)).toEqual({ name: 'webhook-rm', id: ID });
    expect(command('webhook', 'dead', ID, '--limit', '5')).toEqual({
      name: 'webhook-dead',
      id: ID,
      limit: 5,
      json: false,
    });
  });

  it('refuses what the gateway would, before asking it', () => {
    expect(usageMessage('webhook', 'add', 'ftp://hooks.example.com/x', '--event', 'finished')).toMatch(
      /URL "ftp:\/\/hooks.example.com\/x" must be an absolute http:\/\/ or https:\/\/ URL/,
    );
    expect(usageMessage('webhook', 'add', 'https://hooks.example.com/x')).toMatch(/webhook add needs --event/);
    expect(usageMessage('webhook', 'add', 'https://hooks.example.com/x', '--event', 'exploded')).toBe(
      '--event: unknown event kind "exploded"; the kinds are conversation.status_changed, conversation.confirmation_pending, conversation.finished, conversation.expiring',
    );
    expect(usageMessage('webhook', 'rm', 'wh_nope')).toMatch(/is not a webhook id/);
    expect(usageMessage('webhook', 'rm')).toMatch(/needs the webhook's ID/);
    expect(usageMessage('webhook', 'list', '--event', 'finished')).toBe('webhook list does not take --event');
    expect(usageMessage('webhook', 'ping')).toMatch(/^the webhook command is/);
    expect(usageMessage('webhook', 'dead', ID, '--limit', '0')).toMatch(/--limit must be a whole number from 1 to 500/);
  });
});

describe('running webhook commands', () => {
  it('add prints the id and the secret, noting it is shown once', async () => {
    const calls: unknown[][] = [];
    const result = await run(
      ['webhook', 'add', 'https://hooks.example.com/x', '--event', 'finished'],
      recordingClient(calls),
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${ID}\nwhsec_shown-once\n`);
    expect(result.stderr).toMatch(/shown only this once/);
    expect(calls).toEqual([
      ['createWebhook', { url: 'https://hooks.example.com/x', events: ['conversation.finished'] }],
    ]);
  });

  it('list and dead print tables (or JSON); rm says what it removed, and a gateway refusal exits 1', async () => {
    const calls: unknown[][] = [];
    const listed = await run(['webhook', 'list'], recordingClient(calls));
    expect(listed.stdout.split('\n')[0]).toMatch(/^ID\s+EVENTS\s+URL\s+CREATED\s+DESCRIPTION$/);
    expect(listed.stdout).toContain(`${ID}  finished,confirmation_pending  https://hooks.example.com/flotilla  5m ago`);
    const dead = await run(['webhook', 'dead', ID, '--json'], recordingClient(calls));
    expect(JSON.parse(dead.stdout)).toEqual([letter]);
    const table = await run(['webhook', 'dead', ID], recordingClient(calls));
    expect(table.stdout).toContain('finished  c1            12        evt_');
    expect(table.stdout).toContain('HTTP 502');
    expect((await run(['webhook', 'rm', ID], recordingClient(calls))).stdout).toBe(`removed webhook ${ID}\n`);
    const missing = await run(['webhook', 'rm', `wh_${'0'.repeat(32)}`], recordingClient(calls));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/error: webhook_not_found/);
    expect(calls.filter((call) => call[0] === 'listWebhookDeadLetters')).toEqual([
      ['listWebhookDeadLetters', ID, { limit: 100 }],
      ['listWebhookDeadLetters', ID, { limit: 100 }],
    ]);
  });

  it('--help shows the webhook commands', async () => {
    const help = await run(['webhook', '--help'], {});
    expect(help.stdout).toContain('webhook add URL --event KIND');
    expect(help.stdout).toContain('webhook dead ID');
  });
});
