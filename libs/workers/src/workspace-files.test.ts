import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createBwrapProvider, DEFAULT_SANDBOX_SETTINGS, type Sandbox, type SandboxProvider } from '@flotilla/sandbox';
import { maskSecrets, SecretScanner } from '@flotilla/secrets';
import { startNats, type NatsTestServer } from '@flotilla/testing';
import { openWorkspace } from '@flotilla/tools';
import type { WorkspaceOp } from '@flotilla/runtime';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WorkspaceFiles, type WorkspaceOutcome } from './workspace-files.js';

const ref = { tenant: 'acme', conversation: 'files' };
const SECRETS = { API_TOKEN: 'tok-0123456789abcdef' };
let root: string;
let server: NatsTestServer;
let nc: NatsConnection;
let provider: SandboxProvider;
let sandbox: Sandbox;
let workspaceDir: string;
let privateDir: string;
let quota: number | undefined;

/** The handler as the tool runner makes it: the conversation's workspace, sandbox and secrets, masking and scanning. */
function files(): WorkspaceFiles {
  return new WorkspaceFiles(
    {
      use: async (_ref, task) =>
        task({
          workspace: await openWorkspace(workspaceDir, { shownRoot: sandbox.workspacePath, owner: sandbox.owner }),
          sandbox,
          secrets: SECRETS,
        }),
      privateDir: () => privateDir,
    },
    {
      nc,
      logger: pino({ level: 'silent' }),
      mask: maskSecrets,
      scan: (secrets) => new SecretScanner(secrets),
      ...(quota === undefined ? {} : { workspaceQuotaBytes: quota }),
    },
  );
}

const ask = (op: WorkspaceOp, data: Uint8Array = new Uint8Array()): Promise<WorkspaceOutcome> =>
  files().handle({ ref, op, data });
const codeOf = (outcome: WorkspaceOutcome): string => ('code' in outcome ? outcome.code : 'ok');
const bodyOf = (outcome: WorkspaceOutcome): Buffer => {
  if ('code' in outcome) throw new Error(`refused: ${outcome.code}: ${outcome.message}`);
  return Buffer.from(outcome.data ?? new Uint8Array());
};
const metaOf = (outcome: WorkspaceOutcome): Record<string, unknown> => {
  if ('code' in outcome) throw new Error(`refused: ${outcome.code}: ${outcome.message}`);
  return outcome.meta;
};

/** Runs a script in the conversation's sandbox (as the agent's commands run), failing on a non-zero exit. */
async function inSandbox(script: string): Promise<string> {
  const child = await sandbox.spawn('sh', ['-c', script]);
  child.stdin.end();
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
  const exit = await child.exited;
  const output = Buffer.concat(chunks).toString();
  if (exit.code !== 0) throw new Error(`exit ${exit.code}: ${output}`);
  return output;
}

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'flotilla-workspace-files-'));
  server = await startNats();
  nc = await connect({ servers: server.url });
  provider = createBwrapProvider(DEFAULT_SANDBOX_SETTINGS, { stateDir: path.join(root, 'state'), ownedRoot: root });
}, 30_000);

afterAll(async () => {
  await sandbox?.close();
  await nc?.close();
  await server?.[Symbol.asyncDispose]();
  await rm(root, { recursive: true, force: true });
});

beforeEach(async () => {
  await sandbox?.close();
  quota = undefined;
  const run = await mkdtemp(path.join(root, 'run-'));
  workspaceDir = path.join(run, 'workspace');
  privateDir = path.join(run, 'private');
  await mkdir(path.join(workspaceDir, 'src'), { recursive: true });
  await writeFile(path.join(root, 'host-secret.txt'), 'host secret');
  sandbox = await provider.open({ id: 'acme.files', workspace: workspaceDir, privateDir });
  // as if the agent had made it
  if (sandbox.owner) await chown(path.join(workspaceDir, 'src'), sandbox.owner.uid, sandbox.owner.gid);
});

describe('listings', () => {
  it('lists a folder one level, a link as a link with its target as the agent sees it', async () => {
    await writeFile(path.join(workspaceDir, 'src', 'app.py'), 'print(1)\n');
    await symlink('/etc/hostname', path.join(workspaceDir, 'planted'));
    const answer = await ask({ op: 'list', path: '' });
    expect(metaOf(answer)).toEqual({ truncated: false });
    expect(JSON.parse(bodyOf(answer).toString())).toEqual([
      { name: 'src', type: 'directory', size: null, modified_ms: expect.any(Number) },
      { name: 'planted', type: 'symlink', size: null, modified_ms: expect.any(Number), link_target: '/etc/hostname' },
    ]);
    expect(JSON.parse(bodyOf(await ask({ op: 'list', path: 'src' })).toString())).toEqual([
      { name: 'app.py', type: 'file', size: 9, modified_ms: expect.any(Number) },
    ]);
  });

  it('refuses what leads out of the workspace or is not a folder', async () => {
    await symlink(root, path.join(workspaceDir, 'out'));
    await writeFile(path.join(workspaceDir, 'file.txt'), 'x');
    expect(codeOf(await ask({ op: 'list', path: 'out' }))).toBe('outside_workspace');
    expect(codeOf(await ask({ op: 'list', path: 'missing' }))).toBe('not_found');
    expect(codeOf(await ask({ op: 'list', path: 'file.txt' }))).toBe('not_a_directory');
  });

  it('masks a secret in a name', async () => {
    await writeFile(path.join(workspaceDir, `leak-${SECRETS.API_TOKEN}`), '');
    expect(bodyOf(await ask({ op: 'list', path: '' })).toString()).toContain('leak-<secret:API_TOKEN>');
  });
});

describe('downloads', () => {
  const read = (file: string, offset: number, extra: Partial<Extract<WorkspaceOp, { op: 'read' }>> = {}) =>
    ask({ op: 'read', path: file, offset, length: 512 * 1024, max_size: 64 * 1024 * 1024, ...extra });

  it('reads a file in chunks, byte for byte, and stops when it changes between them', async () => {
    const bytes = Buffer.from(Array.from({ length: 1_300_000 }, (_, index) => (index * 7) % 256));
    await writeFile(path.join(workspaceDir, 'data.bin'), bytes);
    const first = await read('data.bin', 0);
    const version = metaOf(first)['version'] as Extract<WorkspaceOp, { op: 'read' }>['version'] & object;
    expect(version.size).toBe(bytes.length);
    const parts = [bodyOf(first)];
    for (let offset = parts[0]!.length; offset < bytes.length; offset += parts[parts.length - 1]!.length)
      parts.push(bodyOf(await read('data.bin', offset, { version })));
    expect(parts.map((part) => part.length)).toEqual([524_288, 524_288, 251_424]);
    expect(Buffer.concat(parts).equals(bytes)).toBe(true);
    await writeFile(path.join(workspaceDir, 'data.bin'), 'changed');
    expect(codeOf(await read('data.bin', 524_288, { version }))).toBe('file_changed');
  });

  it('refuses a file larger than asked for, one that holds a secret, a FIFO, a folder and a link out', async () => {
    await writeFile(path.join(workspaceDir, 'big.txt'), 'x'.repeat(2_000));
    expect(codeOf(await read('big.txt', 0, { max_size: 1_000 }))).toBe('too_large');
    // the agent wrote its token into a file: never handed out, whatever it is cut into
    await writeFile(path.join(workspaceDir, '.env'), `${'#'.repeat(600_000)}\nTOKEN=${SECRETS.API_TOKEN}\n`);
    const leak = await read('.env', 0);
    expect(leak).toMatchObject({ code: 'secret_in_file', message: expect.stringContaining('API_TOKEN') });
    expect(JSON.stringify(leak)).not.toContain(SECRETS.API_TOKEN);
    execFileSync('mkfifo', [path.join(workspaceDir, 'pipe')]);
    expect(codeOf(await read('pipe', 0))).toBe('not_a_regular_file');
    expect(codeOf(await read('src', 0))).toBe('is_a_directory');
    await symlink(path.join(root, 'host-secret.txt'), path.join(workspaceDir, 'planted'));
    expect(codeOf(await read('planted', 0))).toBe('outside_workspace');
    expect(codeOf(await read('../host-secret.txt', 0))).toBe('outside_workspace');
    expect(codeOf(await read(path.join(root, 'host-secret.txt'), 0))).toBe('outside_workspace');
  });
});

describe('uploads', () => {
  const write = (file: string, upload: string, offset: number, data: string | Buffer, final: boolean) =>
    ask({ op: 'write', path: file, upload, offset, final }, Buffer.from(data));

  it('keeps chunks out of the workspace until the last, then puts the file in place at once, its folders made, given to the sandbox user', async () => {
    const upload = 'UPLOAD0000000000000001';
    expect(metaOf(await write('data/in/report.csv', upload, 0, 'a,b\n', false))).toEqual({ done: false, received: 4 });
    expect(existsSync(path.join(workspaceDir, 'data'))).toBe(false);
    // a chunk sent again (its answer was lost) replaces itself
    expect(metaOf(await write('data/in/report.csv', upload, 4, '1,2\n', false))).toEqual({ done: false, received: 8 });
    expect(metaOf(await write('data/in/report.csv', upload, 4, '1,2\n', false))).toEqual({ done: false, received: 8 });
    const done = metaOf(await write('data/in/report.csv', upload, 8, '3,4\n', true));
    const content = 'a,b\n1,2\n3,4\n';
    expect(done).toEqual({
      done: true,
      size: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
      created: true,
    });
    expect(await readFile(path.join(workspaceDir, 'data', 'in', 'report.csv'), 'utf8')).toBe(content);
    // the agent may change what the user put there
    expect(await inSandbox('echo more >> /workspace/data/in/report.csv && cat /workspace/data/in/report.csv')).toBe(
      `${content}more\n`,
    );
    expect(await readdir(path.join(privateDir, 'uploads'))).toEqual([]);
    expect(metaOf(await write('data/in/report.csv', 'UPLOAD0000000000000002', 0, 'new', true))).toMatchObject({
      done: true,
      created: false,
    });
  });

  it('says an upload whose chunks were lost is lost, and refuses a folder, a link out and a full workspace', async () => {
    expect(codeOf(await write('a.txt', 'UPLOAD0000000000000003', 10, 'late', true))).toBe('upload_lost');
    expect(codeOf(await write('src', 'UPLOAD0000000000000004', 0, 'x', true))).toBe('is_a_directory');
    await symlink(path.join(root, 'host-secret.txt'), path.join(workspaceDir, 'planted'));
    expect(codeOf(await write('planted', 'UPLOAD0000000000000005', 0, 'overwritten', true))).toBe('outside_workspace');
    expect(await readFile(path.join(root, 'host-secret.txt'), 'utf8')).toBe('host secret');
    await symlink(root, path.join(workspaceDir, 'out'));
    expect(codeOf(await write('out/new.txt', 'UPLOAD0000000000000006', 0, 'x', true))).toBe('outside_workspace');
    expect(existsSync(path.join(root, 'new.txt'))).toBe(false);
    quota = 64 * 1024;
    const refused = await write('huge.bin', 'UPLOAD0000000000000007', 0, Buffer.alloc(100 * 1024), true);
    expect(codeOf(refused)).toBe('quota_exceeded');
    // the sizes as they are (not rounded down to "0 MiB")
    expect(JSON.stringify(refused)).toContain("the workspace's size quota of 64 KiB");
    expect(existsSync(path.join(workspaceDir, 'huge.bin'))).toBe(false);
  });
});

describe('git, run in the sandbox', () => {
  it('answers not_a_git_repository for a folder outside any repository', async () => {
    expect(await ask({ op: 'git_status', path: '' })).toMatchObject({ code: 'not_a_git_repository' });
    expect(await ask({ op: 'git_diff', path: 'src' })).toMatchObject({ code: 'not_a_git_repository' });
  });

  it('gives the status and the diff (untracked files as new) of a repository, masked, limited to the folder asked for', async () => {
    await inSandbox(
      [
        'cd /workspace/src && git init -q -b main && git config user.email a@b.c && git config user.name agent',
        'printf "one\\ntwo\\n" > app.py && mkdir lib && echo x > lib/keep.txt && git add . && git commit -qm first',
        `printf "one\\nthree ${SECRETS.API_TOKEN}\\n" > app.py && echo new > notes.md && echo y > lib/new.txt && git mv lib/keep.txt lib/kept.txt`,
      ].join(' && '),
    );
    const status = await ask({ op: 'git_status', path: 'src' });
    expect(metaOf(status)).toEqual({ repository_root: 'src', truncated: false });
    const records = bodyOf(status).toString().split('\0');
    expect(records).toContain('# branch.head main');
    expect(records.some((record) => record.startsWith('1 .M ') && record.endsWith(' app.py'))).toBe(true);
    expect(records.some((record) => record.startsWith('2 R. ') && record.endsWith(' lib/kept.txt'))).toBe(true);
    expect(records).toContain('lib/keep.txt');
    expect(records).toContain('? notes.md');
    const diff = await ask({ op: 'git_diff', path: 'src' });
    expect(metaOf(diff)).toEqual({ repository_root: 'src', base: 'HEAD', truncated: false });
    const text = bodyOf(diff).toString();
    expect(text).toContain('-two\n+three <secret:API_TOKEN>');
    expect(text).not.toContain(SECRETS.API_TOKEN);
    expect(text).toContain('+++ b/notes.md');
    expect(text).toContain('+++ b/lib/new.txt');
    // a sub-folder: only its changes
    const lib = bodyOf(await ask({ op: 'git_diff', path: 'src/lib' })).toString();
    expect(lib).toContain('b/lib/new.txt');
    expect(lib).not.toContain('app.py');
  });

  it('never runs what the repository configures outside the sandbox, nor an external diff at all', async () => {
    const marker = path.join(root, `ran-${Date.now()}`);
    await inSandbox(
      [
        'cd /workspace && git init -q && git config user.email a@b.c && git config user.name agent',
        'echo a > a.txt && git add a.txt && git commit -qm first',
        // the agent's config: an external diff, and a clean filter that tries to reach the host
        `git config diff.external "sh -c 'echo external > /workspace/external-ran'"`,
        `git config filter.probe.clean "sh -c 'ls ${root} > /workspace/filter-saw 2>&1; touch ${marker}; cat'"`,
        'echo "*.txt filter=probe" > .gitattributes && echo b > a.txt',
      ].join(' && '),
    );
    const text = bodyOf(await ask({ op: 'git_diff', path: '' })).toString();
    expect(text).toContain('+b');
    expect(existsSync(path.join(workspaceDir, 'external-ran'))).toBe(false);
    // the filter ran (git does run it), inside the sandbox: the service's directories are not there, nothing was made on the host
    expect(await readFile(path.join(workspaceDir, 'filter-saw'), 'utf8')).toMatch(/No such file/);
    expect(existsSync(marker)).toBe(false);
  });

  it('cuts a diff larger than a message at a line and says so', async () => {
    await inSandbox('cd /workspace && git init -q && seq 1 400000 > big.txt');
    const diff = await ask({ op: 'git_diff', path: '' });
    expect(metaOf(diff)).toMatchObject({ base: 'empty_tree', truncated: true });
    const text = bodyOf(diff).toString();
    expect(text.length).toBeLessThanOrEqual(1024 * 1024);
    expect(text.endsWith('\n')).toBe(true);
  });
});
