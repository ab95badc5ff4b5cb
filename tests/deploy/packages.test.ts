import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { FLOTILLA_VERSION } from '@flotilla/api';
import { buildPackages, type BuiltPackage } from '@flotilla/supervisor/package-build';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { taskMessage } from '../support/brain-server.js';
import { runToExit } from '../support/run-to-exit.js';
import { startTestSystem } from '../support/system.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const run = promisify(execFile);

/** The client and the CLI packed, then installed from their tarballs into an empty folder, as a user outside the monorepo would. */
let consumer: string;
let packages: BuiltPackage[];

beforeAll(async () => {
  consumer = await mkdtemp(join(tmpdir(), 'flotilla-consumer-'));
  packages = await buildPackages(ROOT, join(consumer, 'tarballs'), FLOTILLA_VERSION);
  await writeFile(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // from npm's cache where it can (the workspace's install filled it); the registry otherwise
  await run(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', ...packages.map((built) => built.tarball)],
    { cwd: consumer, timeout: 240_000 },
  );
}, 300_000);
afterAll(async () => {
  if (consumer) await rm(consumer, { recursive: true, force: true });
});

/** Runs a program in the consumer folder on plain node: no TypeScript loader, no workspace. */
const inConsumer = (args: readonly string[], env: NodeJS.ProcessEnv = {}) =>
  runToExit(process.execPath, args, {
    env: { PATH: process.env['PATH'] ?? '', HOME: consumer, ...env },
    cwd: consumer,
    timeoutMs: 60_000,
  });

describe('the client and CLI packages', () => {
  it('install outside the workspace with only npm dependencies, at the versions the workspace uses, and no TypeScript loader', async () => {
    const client = packages.find((built) => built.name === '@flotilla/client')!;
    expect(client.dependencies).toEqual({ ws: expect.any(String), zod: expect.any(String) });
    for (const built of packages) {
      expect(Object.keys(built.dependencies).filter((name) => name.startsWith('@flotilla/'))).toEqual([]);
      const manifest = JSON.parse(
        await readFile(join(consumer, 'node_modules', built.name, 'package.json'), 'utf8'),
      ) as { version: string };
      expect(manifest.version).toBe(FLOTILLA_VERSION);
    }
    const installed = await readdir(join(consumer, 'node_modules'));
    for (const loader of ['tsx', 'typescript', 'esbuild', 'vitest']) expect(installed).not.toContain(loader);
    const lock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string }>;
    };
    for (const [name, version] of Object.entries(
      packages.find((built) => built.name === '@flotilla/cli')!.dependencies,
    )) {
      const versions = Object.entries(lock.packages)
        .filter(([path]) => path.endsWith(`node_modules/${name}`))
        .map(([, entry]) => entry.version);
      expect(versions, name).toContain(version);
    }
  });

  it('carry declarations that type-check a consumer and refuse a wrong call', async () => {
    const good = [
      "import { FlotillaClient, FlotillaApiError, type CreateResult } from '@flotilla/client';",
      "import { NodeWebSocket } from '@flotilla/client/node';",
      "const client = new FlotillaClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k', WebSocket: NodeWebSocket });",
      "const created: Promise<CreateResult> = client.createConversation({ title: 't' });",
      'const status: Promise<string> = client.getConversation("c").then((conversation) => conversation.status);',
      'export { created, status, FlotillaApiError };',
    ].join('\n');
    await writeFile(join(consumer, 'good.ts'), good);
    await writeFile(
      join(consumer, 'bad.ts'),
      "import { FlotillaClient } from '@flotilla/client';\nnew FlotillaClient({ baseUrl: 'x', apiKey: 'k' }).getConversation(42);\n",
    );
    const flags = [
      '--noEmit',
      '--strict',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
      '--skipLibCheck',
      'false',
      '--lib',
      'es2023,dom',
    ];
    const checked = await runToExit(process.execPath, [TSC, ...flags, 'good.ts'], {
      env: process.env,
      cwd: consumer,
      timeoutMs: 60_000,
    });
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
    const refused = await runToExit(process.execPath, [TSC, ...flags, 'bad.ts'], {
      env: process.env,
      cwd: consumer,
      timeoutMs: 60_000,
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stdout).toMatch(
      /bad\.ts\(2,\d+\): error TS2345: Argument of type 'number' is not assignable to parameter of type 'string'/,
    );
    // two type checks of up to a minute each: the test's own time covers both
  }, 150_000);

  it('talk to a running gateway: the client over REST and WebSocket, the CLI with --version, --help and list', async () => {
    await using system = await startTestSystem({ gateway: true });
    const id = 'packaged-client';
    await writeFile(
      join(consumer, 'use-client.mjs'),
      [
        "import { FlotillaClient } from '@flotilla/client';",
        "import { NodeWebSocket } from '@flotilla/client/node';",
        'const client = new FlotillaClient({ baseUrl: process.env.URL, apiKey: process.env.KEY, WebSocket: NodeWebSocket });',
        `await client.createConversation({ id: ${JSON.stringify(id)}, title: 'from the package' });`,
        'const types = [];',
        'const finished = new Promise((resolve) => {',
        '  const subscription = client.subscribe(process.env.ID, { onEvent: (event) => { types.push(event.type); if (event.type === "state_change" && event.status === "finished") { subscription.close(); resolve(); } } });',
        '});',
        'await client.sendMessage(process.env.ID, process.env.TASK, { run: true });',
        'await finished;',
        'const { items } = await client.listConversations();',
        'console.log(JSON.stringify({ types, listed: items.map((conversation) => conversation.id), final: (await client.finalResponse(process.env.ID)).text }));',
      ].join('\n'),
    );
    const task = taskMessage({ id, steps: 1, effects: system.effects });
    const used = await inConsumer(['use-client.mjs'], {
      URL: system.gatewayUrl,
      KEY: system.apiKey,
      ID: id,
      TASK: task,
    });
    expect(used.code, used.stderr).toBe(0);
    const result = JSON.parse(used.stdout) as { types: string[]; listed: string[]; final: string };
    expect(result.types).toEqual(
      expect.arrayContaining(['agent_spec', 'message', 'action', 'observation', 'state_change']),
    );
    expect(result.listed).toContain(id);
    expect(result.final).toBe(`Done: 1 steps for ${id}.`);

    const bin = join(consumer, 'node_modules', '.bin', 'flotilla');
    const version = await runToExit(bin, ['--version'], {
      env: { PATH: process.env['PATH'] ?? '' },
      cwd: consumer,
      timeoutMs: 30_000,
    });
    expect(version, version.stderr).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(
        new RegExp(`^flotilla ${FLOTILLA_VERSION.replaceAll('.', '\\.')} \\(API v1, protocol \\d+\\)\n$`),
      ),
    });
    const help = await inConsumer([bin, 'send', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: flotilla send/);
    expect(help.stdout).toContain('send ID TEXT');
    expect(help.stdout).not.toContain('approve ID');
    const listed = await inConsumer([bin, 'list', '--json'], {
      FLOTILLA_URL: system.gatewayUrl,
      FLOTILLA_API_KEY: system.apiKey,
    });
    expect(listed.code, listed.stderr).toBe(0);
    expect(
      (JSON.parse(listed.stdout) as { id: string; status: string }[]).find((conversation) => conversation.id === id),
    ).toMatchObject({ status: 'finished' });
  }, 120_000);

  it('carry Flotilla’s one version: the workspace packages and the chart’s appVersion say FLOTILLA_VERSION', async () => {
    const manifests = ['package.json', ...(await workspaceManifests())];
    for (const manifest of manifests)
      expect((JSON.parse(await readFile(join(ROOT, manifest), 'utf8')) as { version: string }).version, manifest).toBe(
        FLOTILLA_VERSION,
      );
    const chart = parse(await readFile(join(ROOT, 'helm', 'flotilla', 'Chart.yaml'), 'utf8')) as { appVersion: string };
    expect(chart.appVersion).toBe(FLOTILLA_VERSION);
  });
});

async function workspaceManifests(): Promise<string[]> {
  const found: string[] = [];
  for (const group of ['libs', 'services'])
    for (const name of await readdir(join(ROOT, group))) found.push(join(group, name, 'package.json'));
  return found;
}
