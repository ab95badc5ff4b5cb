import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isSupportedServerVersion } from '@flotilla/nats-embedded';
import { unmountWorkspacesUnder } from '@flotilla/sandbox';
import { describe, expect, it } from 'vitest';
import { startQuickStartModel, type QuickStartProvider } from '../support/quick-start-model.js';
import { runToExit, type Exited } from '../support/run-to-exit.js';

/**
 * Removes a run's home. A workspace filesystem outlives its tool runner (docs/security.md, "Disk");
 * the launcher unmounts them as it stops, but not when it was killed (`devUp` kills a launcher that
 * takes 30 s to stop): the next `./dev up` on the home would sweep them, and so does this.
 */
async function removeHome(home: string): Promise<void> {
  await unmountWorkspacesUnder(home);
  await rm(home, { recursive: true, force: true });
}

// The README's quick start, as a new user follows it: `./dev up` itself with only the variables the README names for the model (provider, model,
// base URL, the key in the provider's usual variable), a local server speaking the provider's wire
// protocol standing in for it, then the README's commands exactly as written. Each run has a home of
// its own (FLOTILLA_HOME), so the repository's .flotilla/ is never touched.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The machine's basics (where programs are, the user's home) and nothing else of this process's environment. */
function machineEnvironment(): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'] ?? '',
    HOME: process.env['HOME'] ?? tmpdir(),
  };
}

/** A command of the README, run in the repository as a user types it. */
function readmeCommand(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 120_000,
): Promise<Exited> {
  return runToExit(command, args, { env, cwd: ROOT, timeoutMs });
}

/** `./dev up` in the repository, until it says it is ready; stopped with Ctrl-C (SIGINT to its process group). */
async function devUp(env: NodeJS.ProcessEnv): Promise<AsyncDisposable & { readonly output: () => string }> {
  const child: ChildProcess = spawn('./dev', ['up'], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    process.kill(-child.pid!, 'SIGINT');
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + 180_000;
  while (!output.includes('Press Ctrl-C to stop.')) {
    if (child.exitCode !== null) throw new Error(`./dev up exited (${child.exitCode}) before it was ready:\n${output}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`./dev up was not ready in 180 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { output: () => output, [Symbol.asyncDispose]: stop };
}

const PROVIDERS: readonly {
  readonly provider: QuickStartProvider;
  readonly model: string;
  readonly keyVariable: string;
  readonly key: string;
}[] = [
  { provider: 'openai-chat', model: 'gpt-4o-mini', keyVariable: 'OPENAI_API_KEY', key: 'sk-quick-start-openai' },
  { provider: 'anthropic', model: 'claude-sonnet-4-5', keyVariable: 'ANTHROPIC_API_KEY', key: 'sk-ant-quick-start' },
];

describe("the README's quick start", () => {
  it.each(PROVIDERS)(
    './dev up with $provider and its key in $keyVariable: create … --run --watch finishes, list shows it, the model got the key',
    async ({ provider, model, keyVariable, key }) => {
      await using server = await startQuickStartModel(provider);
      const home = await mkdtemp(join(tmpdir(), 'flotilla-quick-start-'));
      const env = {
        ...machineEnvironment(),
        FLOTILLA_HOME: home,
        FLOTILLA_LLM_PROVIDER: provider,
        FLOTILLA_LLM_MODEL: model,
        FLOTILLA_LLM_BASE_URL: server.baseURL,
        [keyVariable]: key,
      };
      try {
        await using system = await devUp(env);

        // npm run flotilla -- create --title demo --message "list the files here" --run --watch
        const created = await readmeCommand(
          'npm',
          [
            'run',
            'flotilla',
            '--',
            'create',
            '--title',
            'demo',
            '--message',
            'list the files here',
            '--run',
            '--watch',
          ],
          env,
        );
        expect(created.code, `${created.stdout}\n${created.stderr}\n${system.output()}`).toBe(0);
        expect(created.stdout).toContain('user: list the files here');
        expect(created.stdout).toContain('▶ terminal: ls -la');
        expect(created.stdout, created.stdout).toMatch(/● finished/);
        expect(created.stdout).not.toMatch(/● error/);

        // npm run flotilla -- list
        const listed = await readmeCommand('npm', ['run', 'flotilla', '--', 'list'], env);
        expect(listed.code, listed.stderr).toBe(0);
        expect(listed.stdout).toMatch(/ finished +demo /);

        // the model was called with the key from the provider's usual variable, every time
        expect(server.requests.length).toBeGreaterThanOrEqual(2);
        expect(new Set(server.keys())).toEqual(new Set([key]));
      } finally {
        await removeHome(home);
      }
    },
    420_000,
  );

  it('tap, audit, info and packages work as the README writes them, after ./dev up', async () => {
    await using server = await startQuickStartModel('openai-chat');
    const home = await mkdtemp(join(tmpdir(), 'flotilla-quick-start-'));
    const env = {
      ...machineEnvironment(),
      FLOTILLA_HOME: home,
      FLOTILLA_LLM_PROVIDER: 'openai-chat',
      FLOTILLA_LLM_MODEL: 'gpt-4o-mini',
      FLOTILLA_LLM_BASE_URL: server.baseURL,
      OPENAI_API_KEY: 'sk-quick-start',
    };
    try {
      await using system = await devUp(env);
      const created = await readmeCommand(
        'npm',
        ['run', 'flotilla', '--', 'create', '--title', 'demo', '--message', 'list the files here', '--run', '--watch'],
        env,
      );
      expect(created.code, `${created.stdout}\n${created.stderr}\n${system.output()}`).toBe(0);

      // the launcher left the tap's URL and read-only credential where tap and audit look, owner-only, and not the admin's
      const tapFile = join(home, 'tap.json');
      expect((await stat(tapFile)).mode & 0o777).toBe(0o600);

      // npm run flotilla -- tap: every event of every conversation, JSON lines on a pipe
      const tapped = await readmeCommand('npm', ['run', 'flotilla', '--', 'tap'], env);
      expect(tapped.code, tapped.stderr).toBe(0);
      const events = tapped.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { type: string; content?: { text?: string }[] });
      expect(
        events.some((event) => event.type === 'message' && event.content?.[0]?.text === 'list the files here'),
      ).toBe(true);
      expect(
        events.some(
          (event) =>
            event.type === 'finish' || (event.type === 'state_change' && JSON.stringify(event).includes('"finished"')),
        ),
      ).toBe(true);
      expect(tapped.stderr).toMatch(/tap: \d+ event\(s\)/);

      // npm run audit
      const audited = await readmeCommand('npm', ['run', 'audit'], env);
      expect(audited.code, `${audited.stdout}\n${audited.stderr}`).toBe(0);
      expect(audited.stdout).toMatch(
        /audited 1 conversation\(s\) on FLOTILLA_EVENTS: 0 with violations, 0 violation\(s\) in all/,
      );

      // docs/operations.md's audit examples, as written there (the conversation's id, this run's home and server put in)
      // create prints the id first, after npm's own lines
      const id = created.stdout
        .split('\n')
        .map((line) => line.trim())
        .find((line) => line !== '' && !line.startsWith('>'))!;
      const natsUrl = (JSON.parse(await readFile(tapFile, 'utf8')) as { nats_url: string }).nats_url;
      const operations = await readFile(join(ROOT, 'docs/operations.md'), 'utf8');
      const examples =
        /For example, after `\.\/dev up`[^\n]*\n\n```sh\n([^`]*)```/.exec(operations)?.[1]?.trim().split('\n') ?? [];
      expect(examples).toHaveLength(3);
      for (const example of examples) {
        const line = example
          .replaceAll('<id>', id)
          .replaceAll('.flotilla/', `${home}/`)
          .replaceAll('nats://127.0.0.1:14222', natsUrl);
        const run = await readmeCommand('bash', ['-c', line], env);
        expect(run.code, `${line}\n${run.stdout}\n${run.stderr}`).toBe(0);
        expect(run.stdout).toMatch(line.includes('--json') ? /"conversations": 1,/ : /audited 1 conversation\(s\)/);
      }

      // flotilla info (npm run flotilla -- info)
      const info = await readmeCommand('npm', ['run', 'flotilla', '--', 'info'], env);
      expect(info.code, info.stderr).toBe(0);
      expect(info.stdout).toMatch(/^flotilla-gateway /m);
      expect(info.stdout).toMatch(/^tenant: +local$/m);
      expect(info.stdout).toContain('gpt-4o-mini');
    } finally {
      await removeHome(home);
    }

    // npm run packages: the client and the CLI packed for plain node
    const packed = await readmeCommand('npm', ['run', 'packages'], machineEnvironment(), 240_000);
    expect(packed.code, packed.stderr).toBe(0);
    expect(packed.stdout).toMatch(/^@flotilla\/client: dist\/packages\/.*\.tgz$/m);
    expect(packed.stdout).toMatch(/^@flotilla\/cli: dist\/packages\/.*\.tgz$/m);
  }, 600_000);

  it('eval "$(./dev env)" gives a shell the Node.js major of .node-version and a nats-server new enough', async () => {
    // a shell as a user opens it: the machine's PATH without the Node.js ./dev put first for this run
    const machinePath = (process.env['PATH'] ?? '')
      .split(':')
      .filter((dir) => !dir.includes('/.cache/node-'))
      .join(':');
    const shell = await readmeCommand(
      'bash',
      ['-c', 'eval "$(./dev env)" && node --version && "$NATS_SERVER_BIN" --version'],
      { PATH: machinePath, HOME: machineEnvironment()['HOME'] },
    );
    expect(shell.code, shell.stderr).toBe(0);
    const wanted = (await readFile(join(ROOT, '.node-version'), 'utf8')).trim();
    const [node, nats] = shell.stdout.trim().split('\n');
    // the machine's own node when it is that major already, else the one ./dev fetched
    expect(node?.split('.')[0]).toBe(`v${wanted.split('.')[0]}`);
    expect(isSupportedServerVersion(nats ?? '')).toBe(true);
  });
});
