import { Readable } from 'node:stream';
import { FlotillaApiError } from '@flotilla/client';
import { describe, expect, it } from 'vitest';
import { parseCliArgs } from './args.js';
import type { CliClient } from './cli-client.js';
import { CliError } from './errors.js';
import { runCli } from './run-cli.js';
import type { SecretInput } from './secret-commands.js';
import { readStdinValue } from './stdin-value.js';
import { Captured } from './test-support/fake-stream.js';

const VALUE = 'ghp_CliSecretValue_0123456789';

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

type Call = [string, ...unknown[]];

/** A fake gateway client that records the secret calls it gets. */
function recordingClient(calls: Call[], names: string[] = ['A_TOKEN', 'B_TOKEN']): Partial<CliClient> {
  const record =
    (method: string) =>
    async (...args: unknown[]) => {
      calls.push([method, ...args]);
    };
  return {
    setConversationSecret: record('setConversationSecret'),
    removeConversationSecret: record('removeConversationSecret'),
    setTenantSecret: record('setTenantSecret'),
    removeTenantSecret: record('removeTenantSecret'),
    listConversationSecrets: async (id: string) => {
      calls.push(['listConversationSecrets', id]);
      return names;
    },
    listTenantSecrets: async () => {
      calls.push(['listTenantSecrets']);
      return names;
    },
  };
}

async function run(argv: string[], client: Partial<CliClient>, input?: Partial<SecretInput>) {
  const stdout = new Captured();
  const stderr = new Captured();
  const prompts: string[] = [];
  const code = await runCli(argv, {
    stdout,
    stderr,
    env: { FLOTILLA_URL: 'http://gw:1', FLOTILLA_API_KEY: 'k' },
    readConfig: () => undefined,
    createClient: () => client as CliClient,
    input: {
      readStdin: async (prompt) => {
        prompts.push(prompt);
        if (!input?.readStdin) throw new Error('no stdin in this test');
        return input.readStdin(prompt);
      },
      readFile: async (path) => {
        if (!input?.readFile) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
        return input.readFile(path);
      },
    },
  });
  return { code, stdout: stdout.text, stderr: stderr.text, prompts };
}

describe('parsing secret commands', () => {
  it('reads set, rm and ls for a conversation and for the tenant defaults', () => {
    expect(command('secret', 'set', 'c1', 'GITHUB_TOKEN')).toEqual({
      name: 'secret-set',
      target: { conversation: 'c1' },
      secretName: 'GITHUB_TOKEN',
      source: { kind: 'stdin' },
    });
    expect(command('secret', 'set', 'c1', 'KEY', '--value-file', 'key.pem')).toMatchObject({
      source: { kind: 'file', path: 'key.pem' },
    });
    expect(command('secret', 'set', 'c1', 'KEY', '--value', 'v')).toMatchObject({
      source: { kind: 'argument', value: 'v' },
    });
    expect(command('secret', 'rm', 'c1', 'KEY')).toEqual({
      name: 'secret-rm',
      target: { conversation: 'c1' },
      secretName: 'KEY',
    });
    expect(command('secret', 'ls', 'c1', '--json')).toEqual({
      name: 'secret-ls',
      target: { conversation: 'c1' },
      json: true,
    });
    expect(command('secret', 'set', '--tenant', 'NPM_TOKEN')).toEqual({
      name: 'secret-set',
      target: { tenant: true },
      secretName: 'NPM_TOKEN',
      source: { kind: 'stdin' },
    });
    expect(command('secret', 'rm', 'NPM_TOKEN', '--tenant')).toEqual({
      name: 'secret-rm',
      target: { tenant: true },
      secretName: 'NPM_TOKEN',
    });
    expect(command('--url', 'http://gw', 'secret', 'ls', '--tenant')).toEqual({
      name: 'secret-ls',
      target: { tenant: true },
      json: false,
    });
    // keys create still takes a tenant's name
    expect(command('keys', 'create', '--tenant', 'acme', '--name', 'ci')).toMatchObject({
      name: 'keys-create',
      tenant: 'acme',
    });
  });

  it('says what is wrong, and never quotes a NAME that is not one', () => {
    expect(usageMessage('secret')).toContain('flotilla secret set|rm|ls');
    expect(usageMessage('secret', 'get', 'c1', 'X')).toContain('flotilla secret set|rm|ls');
    expect(usageMessage('secret', 'set', 'c1')).toBe(
      'secret set needs ID and NAME, e.g. flotilla secret set my-conversation GITHUB_TOKEN',
    );
    expect(usageMessage('secret', 'ls', '--tenant', 'c1')).toBe(
      'secret ls --tenant needs no argument, e.g. flotilla secret ls --tenant',
    );
    expect(usageMessage('secret', 'set', 'a.b', 'X')).toContain('is not a conversation id');
    const pasted = usageMessage('secret', 'set', 'c1', VALUE);
    expect(pasted).toContain('NAME must be an environment-variable name');
    expect(pasted).not.toContain(VALUE);
    expect(usageMessage('secret', 'rm', 'c1', 'X', '--value', 'v')).toBe(
      'secret rm does not take --value or --value-file',
    );
    expect(usageMessage('secret', 'set', 'c1', 'X', '--value', 'v', '--value-file', 'f')).toContain('not both');
    expect(usageMessage('secret', 'set', 'c1', 'X', '--json')).toBe('secret set does not take --json');
    expect(usageMessage('list', '--value', 'v')).toBe('list does not take --value');
  });
});

describe('flotilla secret', () => {
  it('set reads the value from stdin (dropping one final newline), sends it, and prints only the name', async () => {
    const calls: Call[] = [];
    const result = await run(['secret', 'set', 'c1', 'GITHUB_TOKEN'], recordingClient(calls), {
      readStdin: async () => `${VALUE}\n`,
    });
    expect(result).toMatchObject({ code: 0, stdout: 'set secret GITHUB_TOKEN of conversation c1\n', stderr: '' });
    expect(result.prompts).toEqual(['Value of GITHUB_TOKEN (input hidden): ']);
    expect(calls).toEqual([['setConversationSecret', 'c1', 'GITHUB_TOKEN', VALUE]]);
  });

  it('set --value-file sends the file exactly; --value works with a warning', async () => {
    const calls: Call[] = [];
    const pem = '-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n';
    const fromFile = await run(
      ['secret', 'set', 'c1', 'DEPLOY_KEY', '--value-file', 'key.pem'],
      recordingClient(calls),
      { readFile: async (path) => (path === 'key.pem' ? pem : '') },
    );
    expect(fromFile.code).toBe(0);
    const fromArgument = await run(
      ['secret', 'set', '--tenant', 'NPM_TOKEN', '--value', VALUE],
      recordingClient(calls),
    );
    expect(fromArgument).toMatchObject({ code: 0, stdout: 'set secret NPM_TOKEN of the tenant defaults\n' });
    expect(fromArgument.stderr).toMatch(/^warning: --value puts the secret in your shell history/);
    expect(calls).toEqual([
      ['setConversationSecret', 'c1', 'DEPLOY_KEY', pem],
      ['setTenantSecret', 'NPM_TOKEN', VALUE],
    ]);
    for (const output of [fromFile.stdout, fromFile.stderr, fromArgument.stdout, fromArgument.stderr])
      expect(output).not.toContain(VALUE);
    const missing = await run(['secret', 'set', 'c1', 'X_TOKEN', '--value-file', 'nowhere'], recordingClient(calls));
    expect(missing).toMatchObject({ code: 2, stderr: expect.stringContaining('--value-file nowhere: ENOENT') });
  });

  it('rm and ls, for a conversation and the tenant; ls prints names one per line or as JSON', async () => {
    const calls: Call[] = [];
    expect((await run(['secret', 'rm', 'c1', 'A_TOKEN'], recordingClient(calls))).stdout).toBe(
      'removed secret A_TOKEN of conversation c1\n',
    );
    expect((await run(['secret', 'rm', '--tenant', 'A_TOKEN'], recordingClient(calls))).stdout).toBe(
      'removed secret A_TOKEN of the tenant defaults\n',
    );
    expect((await run(['secret', 'ls', 'c1'], recordingClient(calls))).stdout).toBe('A_TOKEN\nB_TOKEN\n');
    expect(JSON.parse((await run(['secret', 'ls', '--tenant', '--json'], recordingClient(calls))).stdout)).toEqual({
      names: ['A_TOKEN', 'B_TOKEN'],
    });
    expect(await run(['secret', 'ls', 'c1'], recordingClient(calls, []))).toMatchObject({
      code: 0,
      stdout: '',
      stderr: 'no secrets in conversation c1\n',
    });
    expect(calls.map((call) => call[0])).toEqual([
      'removeConversationSecret',
      'removeTenantSecret',
      'listConversationSecrets',
      'listTenantSecrets',
      'listConversationSecrets',
    ]);
  });

  it("prints the gateway's refusal, which never holds the value", async () => {
    const client: Partial<CliClient> = {
      setConversationSecret: () =>
        Promise.reject(
          new FlotillaApiError(400, 'validation_failed', 'body.value: a secret value needs at least 4 characters', [
            { path: 'body.value', message: 'a secret value needs at least 4 characters' },
          ]),
        ),
      removeConversationSecret: () =>
        Promise.reject(new FlotillaApiError(404, 'secret_not_found', 'No secret X_TOKEN in this conversation.')),
      setTenantSecret: () =>
        Promise.reject(
          new FlotillaApiError(
            503,
            'secrets_not_configured',
            'Secrets are not configured on this gateway: set FLOTILLA_SECRETS_KEY_FILE',
          ),
        ),
    };
    const short = await run(['secret', 'set', 'c1', 'X_TOKEN'], client, { readStdin: async () => 'abc\n' });
    expect(short).toMatchObject({
      code: 1,
      stderr:
        'error: validation_failed: body.value: a secret value needs at least 4 characters\n  body.value: a secret value needs at least 4 characters\n',
    });
    expect(await run(['secret', 'rm', 'c1', 'X_TOKEN'], client)).toMatchObject({
      code: 1,
      stderr: 'error: secret_not_found: No secret X_TOKEN in this conversation.\n',
    });
    expect((await run(['secret', 'set', '--tenant', 'X_TOKEN', '--value', VALUE], client)).stderr).toContain(
      'secrets_not_configured',
    );
  });
});

describe('readStdinValue', () => {
  it('reads a pipe to its end, as UTF-8', async () => {
    const written: string[] = [];
    const stdin = Readable.from([Buffer.from('päss '), Buffer.from('wörd\nline 2\n')]);
    expect(await readStdinValue('prompt: ', stdin, { write: (text: string) => written.push(text) })).toBe(
      'päss wörd\nline 2\n',
    );
    expect(written).toEqual([]); // no prompt for a pipe
  });

  it('on a terminal, prompts, reads one line without echo, and honours backspace', async () => {
    const written: string[] = [];
    const modes: boolean[] = [];
    const stdin = Object.assign(new Readable({ read() {} }), {
      isTTY: true,
      setRawMode: (mode: boolean) => modes.push(mode),
    });
    const reading = readStdinValue('Value: ', stdin, { write: (text: string) => written.push(text) });
    stdin.push('secrex');
    stdin.push('\u007ft\r');
    expect(await reading).toBe('secret');
    expect(modes).toEqual([true, false]);
    expect(written).toEqual(['Value: ', '\n']);
  });
});
