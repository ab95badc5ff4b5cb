import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FlotillaApiError, FlotillaClient } from '@flotilla/client';
import type { ErrorBody } from '@flotilla/api';
import type { ConversationRef } from '@flotilla/log';
import { RunnerRegistry } from '@flotilla/runtime';
import { generateSecretsKey } from '@flotilla/secrets';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAudited } from '../support/audited.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

/**
 * Workspace files and git through the services: the gateway's REST routes, the tool runner that
 * owns the workspace (reached over NATS), the real bubblewrap sandbox for git, a real
 * nats-server with each service's own credentials (no permission violation allowed).
 */

const MAX_FILE_BYTES = 3 * 1024 * 1024;
const TOKEN = 'tok-files-0123456789abcdef';

let system: RunningTestSystem;
let client: FlotillaClient;

/** Runs `commands` in the conversation's terminal, through the agent, to its finish. */
async function runCommands(ref: ConversationRef, commands: readonly string[]): Promise<void> {
  await system.start(ref, { id: ref.conversation, steps: commands.length, commands });
  await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 90_000);
  expect(await system.status(ref)).toBe('finished');
}

/** The API's error code for a failed call. */
async function codeOf(call: Promise<unknown>): Promise<string> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, 'expected the gateway to refuse it').toBeInstanceOf(FlotillaApiError);
  return `${(error as FlotillaApiError).status} ${(error as FlotillaApiError).code}`;
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

beforeAll(async () => {
  const key = generateSecretsKey();
  system = await startTestSystem({
    gateway: true,
    gatewayEnv: { FLOTILLA_SECRETS_KEY: key, FLOTILLA_GATEWAY_MAX_FILE_BYTES: String(MAX_FILE_BYTES) },
    toolRunnerEnv: { FLOTILLA_SECRETS_KEY: key },
  });
  client = new FlotillaClient({ baseUrl: system.gatewayUrl, apiKey: system.apiKey });
}, 120_000);

afterAll(async () => {
  await system?.[Symbol.asyncDispose]();
});

describe('workspace files through the API', () => {
  it('uploads before any tool ran, downloads byte for byte, lists, records the upload in the log, and the agent finds the file', async () => {
    const ref = { tenant: 'acme', conversation: 'files-roundtrip' };
    await client.createConversation({ id: ref.conversation });
    // every byte value, more than two chunks of 512 KiB
    const blob = new Uint8Array(1_300_000).map((_, index) => (index * 31 + 7) % 256);
    const uploaded = await client.uploadFile(ref.conversation, 'data/blob.bin', blob);
    expect(uploaded).toMatchObject({ path: 'data/blob.bin', size: blob.length, sha256: sha256(blob), created: true });
    expect(Buffer.from(await client.downloadFile(ref.conversation, 'data/blob.bin')).equals(Buffer.from(blob))).toBe(
      true,
    );
    const root = await client.listFiles(ref.conversation);
    expect(root).toMatchObject({
      path: '',
      truncated: false,
      entries: [{ name: 'data', path: 'data', type: 'directory', size: null }],
    });
    expect((await client.listFiles(ref.conversation, 'data')).entries).toEqual([
      { name: 'blob.bin', path: 'data/blob.bin', type: 'file', size: blob.length, modified_at: expect.any(String) },
    ]);
    // a small text file replacing itself: 200, and an empty one
    expect(await client.uploadFile(ref.conversation, 'notes.txt', 'first')).toMatchObject({ created: true });
    expect(await client.uploadFile(ref.conversation, 'notes.txt', 'second')).toMatchObject({ created: false, size: 6 });
    expect(await client.uploadFile(ref.conversation, 'empty.txt', new Uint8Array())).toMatchObject({
      created: true,
      size: 0,
    });
    expect(Buffer.from(await client.downloadFile(ref.conversation, 'empty.txt')).length).toBe(0);

    // the log says who put what where
    const recorded = (await system.events(ref)).filter((event) => event.type === 'workspace_file');
    expect(
      recorded.map((event) => [
        event.source,
        event.type === 'workspace_file' && [event.path, event.action, event.size],
      ]),
    ).toEqual([
      ['user', ['data/blob.bin', 'created', blob.length]],
      ['user', ['notes.txt', 'created', 5]],
      ['user', ['notes.txt', 'replaced', 6]],
      ['user', ['empty.txt', 'created', 0]],
    ]);
    expect(recorded[0]!.seq).toBe(uploaded.seq);

    // what the user put there is what the agent's sandbox sees
    await runCommands(ref, ['sha256sum data/blob.bin > seen.txt; cat notes.txt >> seen.txt']);
    const seen = Buffer.from(await client.downloadFile(ref.conversation, 'seen.txt')).toString();
    expect(seen).toBe(`${sha256(blob)}  data/blob.bin\nsecond`);
    // uploads landing between the agent's commits keep its log a valid one
    await expectAudited(system.log, ref);
  }, 120_000);

  it('refuses paths outside the workspace: ../, absolute paths, and links the agent planted', async () => {
    const ref = { tenant: 'acme', conversation: 'files-escape' };
    await client.createConversation({ id: ref.conversation });
    await runCommands(ref, [
      'ln -s /etc/hostname planted-file && ln -s / planted-dir && ln -s .. up && mkdir real && ln -s real inside-link && echo ok > real/ok.txt',
    ]);
    for (const path of ['../etc/passwd', '/etc/passwd', 'real/../../x', '..']) {
      expect(await codeOf(client.downloadFile(ref.conversation, path)), path).toBe('400 validation_failed');
      expect(await codeOf(client.listFiles(ref.conversation, path)), path).toBe('400 validation_failed');
      expect(await codeOf(client.uploadFile(ref.conversation, path, 'x')), path).toBe('400 validation_failed');
    }
    expect(await codeOf(client.downloadFile(ref.conversation, 'planted-file'))).toBe('403 path_outside_workspace');
    expect(await codeOf(client.listFiles(ref.conversation, 'planted-dir'))).toBe('403 path_outside_workspace');
    expect(await codeOf(client.downloadFile(ref.conversation, 'planted-dir/etc/hostname'))).toBe(
      '403 path_outside_workspace',
    );
    expect(await codeOf(client.listFiles(ref.conversation, 'up'))).toBe('403 path_outside_workspace');
    expect(await codeOf(client.uploadFile(ref.conversation, 'planted-dir/flotilla-escaped.txt', 'escaped'))).toBe(
      '403 path_outside_workspace',
    );
    expect(await codeOf(client.uploadFile(ref.conversation, 'planted-file', 'overwritten'))).toBe(
      '403 path_outside_workspace',
    );
    expect(existsSync('/flotilla-escaped.txt')).toBe(false);
    expect(await codeOf(client.gitStatus(ref.conversation, 'planted-dir'))).toBe('403 path_outside_workspace');
    // the listing shows the links as links, with what they hold
    const entries = (await client.listFiles(ref.conversation)).entries;
    expect(entries.find((entry) => entry.name === 'planted-file')).toMatchObject({
      type: 'symlink',
      link_target: '/etc/hostname',
    });
    // a link that stays inside is followed
    expect(Buffer.from(await client.downloadFile(ref.conversation, 'inside-link/ok.txt')).toString()).toBe('ok\n');
    expect(await codeOf(client.downloadFile(ref.conversation, 'real'))).toBe('409 is_a_directory');
    expect(await codeOf(client.listFiles(ref.conversation, 'real/ok.txt'))).toBe('409 not_a_directory');
    expect(await codeOf(client.downloadFile(ref.conversation, 'missing.txt'))).toBe('404 file_not_found');
    expect(await codeOf(client.uploadFile(ref.conversation, 'real', 'x'))).toBe('409 is_a_directory');
  }, 120_000);

  it('gives the git status and diff of the agent’s repository, masked, and says when a folder is in none', async () => {
    const ref = { tenant: 'acme', conversation: 'files-git' };
    await client.createConversation({ id: ref.conversation });
    await client.setConversationSecret(ref.conversation, 'FILES_TOKEN', TOKEN);
    expect(await codeOf(client.gitStatus(ref.conversation))).toBe('409 not_a_git_repository');
    expect(await codeOf(client.gitDiff(ref.conversation))).toBe('409 not_a_git_repository');
    await runCommands(ref, [
      'mkdir /workspace/project && cd /workspace/project && git init -q -b main && git config user.email agent@example.com && git config user.name agent && printf "one\\ntwo\\n" > app.py && git add app.py && git commit -qm first',
      'cd /workspace/project && printf "one\\nthree $FILES_TOKEN\\n" > app.py && echo "# notes" > NOTES.md && echo "$FILES_TOKEN" > token.txt',
    ]);
    expect(await codeOf(client.gitStatus(ref.conversation))).toBe('409 not_a_git_repository');
    const status = await client.gitStatus(ref.conversation, 'project');
    expect(status).toMatchObject({
      path: 'project',
      repository_root: 'project',
      branch: { head: 'main', upstream: null },
      truncated: false,
    });
    expect(status.branch.oid).toMatch(/^[0-9a-f]{40}$/);
    expect(status.entries).toEqual(
      expect.arrayContaining([
        { path: 'project/app.py', kind: 'changed', index: '.', worktree: 'M' },
        { path: 'project/NOTES.md', kind: 'untracked', index: '?', worktree: '?' },
      ]),
    );
    const diff = await client.gitDiff(ref.conversation, 'project');
    expect(diff).toMatchObject({ repository_root: 'project', base: 'HEAD', truncated: false });
    expect(diff.diff).toContain('-two\n+three <secret:FILES_TOKEN>');
    expect(diff.diff).toContain('+++ b/NOTES.md');
    expect(JSON.stringify(diff)).not.toContain(TOKEN);
    // a file holding the secret's value is never handed out
    const refused = await client.downloadFile(ref.conversation, 'project/token.txt').catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 403, code: 'secret_in_file' });
    expect((refused as Error).message).toContain('FILES_TOKEN');
    expect((refused as Error).message).not.toContain(TOKEN);
  }, 120_000);

  it('refuses a file larger than the limit either way with 413, and another tenant’s workspace with 404', async () => {
    const ref = { tenant: 'acme', conversation: 'files-limits' };
    await client.createConversation({ id: ref.conversation });
    expect(await codeOf(client.uploadFile(ref.conversation, 'big.bin', new Uint8Array(MAX_FILE_BYTES + 1)))).toBe(
      '413 file_too_large',
    );
    expect((await client.listFiles(ref.conversation)).entries).toEqual([]);
    // exactly the limit is fine
    expect(await client.uploadFile(ref.conversation, 'max.bin', new Uint8Array(MAX_FILE_BYTES))).toMatchObject({
      size: MAX_FILE_BYTES,
    });
    await runCommands(ref, [`head -c ${MAX_FILE_BYTES + 10} /dev/zero > made.bin`]);
    expect(await codeOf(client.downloadFile(ref.conversation, 'made.bin'))).toBe('413 file_too_large');
    // bytes to a JSON route, JSON to the upload
    const wrongType = await system.api('PUT', `/conversations/${ref.conversation}/files/content?path=x.json`, {
      not: 'bytes',
    });
    expect([wrongType.status, (wrongType.body as ErrorBody).error.code]).toEqual([415, 'unsupported_media_type']);
    const other = new FlotillaClient({ baseUrl: system.gatewayUrl, apiKey: system.otherApiKey });
    for (const call of [
      () => other.listFiles(ref.conversation),
      () => other.downloadFile(ref.conversation, 'max.bin'),
      () => other.uploadFile(ref.conversation, 'x.txt', 'x'),
      () => other.gitStatus(ref.conversation),
      () => other.gitDiff(ref.conversation),
    ]) {
      expect(await codeOf(call())).toBe('404 conversation_not_found');
    }
    expect(await codeOf(client.listFiles('no-such-conversation'))).toBe('404 conversation_not_found');
    // the workspace holds only what acme put there
    expect(existsSync(join(system.home, 'workspaces', 'globex', ref.conversation))).toBe(false);
    expect((await readFile(join(system.home, 'workspaces', 'acme', ref.conversation, 'max.bin'))).length).toBe(
      MAX_FILE_BYTES,
    );
  }, 120_000);
});

describe('with two tool runners', () => {
  it('reaches the runner that owns the workspace, and never moves it', async () => {
    await using two = await startTestSystem({ gateway: true, toolRunners: 2 });
    const api = new FlotillaClient({ baseUrl: two.gatewayUrl, apiKey: two.apiKey });
    const runners = await RunnerRegistry.open(two.nc, { livenessMs: 3_000 });
    const live = (await runners.list()).map((runner) => runner.runner);
    expect(live).toHaveLength(2);
    // each runner owns two of the workspaces (as if each had taken them first)
    const refs = Array.from({ length: 4 }, (_, index) => ({ tenant: 'acme', conversation: `owned-${index}` }));
    for (const [index, ref] of refs.entries()) {
      await api.createConversation({ id: ref.conversation });
      expect(await runners.claim(ref, live[index % 2]!, undefined)).toBe(true);
      await two.start(ref, { id: ref.conversation, steps: 1, commands: ['echo from-the-agent > made.txt'] });
    }
    await two.waitForStatus(refs, ['finished', 'error', 'stuck'], 90_000);
    const owners = await Promise.all(refs.map(async (ref) => (await runners.owner(ref))?.runner));
    expect(owners).toEqual(refs.map((_, index) => live[index % 2]));
    for (const [index, ref] of refs.entries()) {
      for (let round = 0; round < 3; round += 1) {
        expect(Buffer.from(await api.downloadFile(ref.conversation, 'made.txt')).toString()).toBe('from-the-agent\n');
        await api.uploadFile(ref.conversation, `round-${round}.txt`, `${round}`);
        expect((await api.listFiles(ref.conversation)).entries.map((entry) => entry.name)).toContain(
          `round-${round}.txt`,
        );
      }
      expect((await runners.owner(ref))?.runner, ref.conversation).toBe(owners[index]);
    }
  }, 180_000);
});
