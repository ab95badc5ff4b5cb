// The image (deploy/Dockerfile) and Compose (docker-compose.yml): the runtime stage holds the
// bundles and the production dependencies only (checked from package-lock.json: what
// `npm ci --omit=dev` installs), every bundle's imports are among those, tini is PID 1, /data
// belongs to the runtime user; Compose passes the settings through to the services that use them.
// Where a Docker engine is reachable, the image is built and each service started to ready.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { bundleService } from '@flotilla/supervisor';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from './k8s-tools.js';
import { packageName, productionPackages, readLockfile } from './lockfile.js';

const run = promisify(execFile);

type Stage = { readonly name: string; readonly lines: readonly string[] };

/** The Dockerfile's stages, each with its instructions (continuations joined, comments dropped). */
async function dockerfileStages(): Promise<Stage[]> {
  const text = await readFile(join(ROOT, 'deploy', 'Dockerfile'), 'utf8');
  const instructions: string[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#') || line === '') continue;
    current += (current === '' ? '' : ' ') + line.replace(/\\$/, '').trim();
    if (!line.endsWith('\\')) {
      instructions.push(current);
      current = '';
    }
  }
  const stages: { name: string; lines: string[] }[] = [];
  for (const instruction of instructions) {
    const from = /^FROM\s+\S+(?:\s+AS\s+(\S+))?/i.exec(instruction);
    if (from) stages.push({ name: from[1] ?? `stage${stages.length}`, lines: [] });
    else stages.at(-1)?.lines.push(instruction);
  }
  return stages;
}

/** The services the image bundles (libs/supervisor/src/bundle-cli.ts, the one list). */
async function bundledServices(): Promise<string[]> {
  const source = await readFile(join(ROOT, 'libs', 'supervisor', 'src', 'bundle-cli.ts'), 'utf8');
  const list = /const SERVICES = \[([^\]]+)\]/.exec(source)?.[1];
  if (list === undefined) throw new Error('bundle-cli.ts: no SERVICES list');
  return [...list.matchAll(/'([^']+)'/g)].map((match) => match[1]!);
}

/** Root devDependencies and the tools the issue names: none may be in the runtime stage. */
const DEV_TOOLS = [
  'vite',
  'vitest',
  'nx',
  'eslint',
  'typescript',
  'tsx',
  'testcontainers',
  'docker-compose',
  'fast-check',
  'kubernetes-models',
  '@aws-cdk/lambda-layer-kubectl-v35',
  'aws-cdk-lib',
];

/** A Docker engine to build the image with, if one is reachable. */
const engine = await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 10_000 }).then(
  (result) => result.stdout.trim() !== '',
  () => false,
);
if (!engine)
  console.info(
    'image.test.ts: no Docker engine reachable (docker info failed): the image build-and-start test is skipped',
  );

describe('the image', () => {
  it('builds and runs on the Node.js major of .node-version (the one place the version is chosen)', async () => {
    const wanted = (await readFile(join(ROOT, '.node-version'), 'utf8')).trim();
    expect(wanted).toMatch(/^\d+\.\d+\.\d+$/);
    const text = await readFile(join(ROOT, 'deploy', 'Dockerfile'), 'utf8');
    const image = /^ARG NODE_IMAGE=(\S+)$/m.exec(text)?.[1];
    expect(image, 'deploy/Dockerfile declares ARG NODE_IMAGE=<image>').toBeDefined();
    // node:<major>-<variant> or node:<major>.<minor>.<patch>-<variant>: the same major as .node-version
    expect(/^node:(\d+)(?:[.-]|$)/.exec(image!)?.[1]).toBe(wanted.split('.')[0]);
    // every stage starts from that image, none from another node
    expect(text.match(/^FROM \S+/gm)).toEqual(['FROM ${NODE_IMAGE}', 'FROM ${NODE_IMAGE}', 'FROM ${NODE_IMAGE}']);
  });

  it('runtime stage: bundles and production dependencies only, tini as PID 1, /data owned by its user, OCI labels', async () => {
    const stages = await dockerfileStages();
    expect(stages.map((stage) => stage.name)).toEqual(['build', 'deps', 'runtime']);
    const [build, deps, runtime] = stages as [Stage, Stage, Stage];
    expect(build.lines.join('\n')).toMatch(/npm ci .*bundle-cli\.ts/);
    expect(deps.lines.join('\n')).toMatch(/npm ci --omit=dev/);
    const steps = runtime.lines.join('\n');
    // nothing is installed with npm in the runtime stage: its node_modules come from deps
    expect(steps).not.toMatch(/\bnpm\b|\btsx\b/);
    const copies = runtime.lines.filter((line) => line.startsWith('COPY'));
    expect(copies.filter((line) => line.includes('node_modules ')).length).toBeGreaterThan(0);
    for (const line of copies.filter((l) => /\/app\/node_modules\b/.test(l)))
      expect(line).toMatch(/^COPY --from=deps /);
    // every bundle the build makes is copied, and only bundles of services/ come from build
    for (const service of await bundledServices())
      expect(
        copies.some((line) => line.includes(`/app/services/${service}/dist/main.mjs`)),
        service,
      ).toBe(true);
    expect(
      copies.some((line) => /--from=build \/app\/services \./.test(line) || /--from=build \/app\/libs \./.test(line)),
    ).toBe(false);
    expect(runtime.lines).toContainEqual(expect.stringMatching(/^ENTRYPOINT \["\/usr\/bin\/tini", "--", "node"/));
    expect(steps).toMatch(/apt-get install .*\btini\b.*\bbubblewrap\b.*\bslirp4netns\b/);
    expect(steps).toMatch(/chown -R node:node \/data/);
    expect(runtime.lines.at(-3)).toBe('USER node');
    for (const label of ['title', 'description', 'version', 'revision', 'licenses'])
      expect(steps).toContain(`org.opencontainers.image.${label}=`);
  });

  it('carries no dev dependency: what npm ci --omit=dev installs, from package-lock.json', async () => {
    const lock = await readLockfile(ROOT);
    const production = productionPackages(lock);
    // the computation agrees with npm's own dev flags in the lockfile
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path.includes('node_modules/'))
        expect(production.has(path), `${path}: dev flag ${String(entry.dev)}`).toBe(entry.dev !== true);
    }
    const names = new Set([...production].filter((path) => path.includes('node_modules/')).map(packageName));
    const root = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    // (protobufjs, under OpenTelemetry's exporter, declares @types/node a dependency of its own)
    const declaredByProduction = new Set(['@types/node']);
    for (const tool of [
      ...DEV_TOOLS,
      ...Object.keys(root.devDependencies).filter((name) => !declaredByProduction.has(name)),
    ])
      expect(names.has(tool), `${tool} in the runtime stage`).toBe(false);
    expect(names.size).toBeLessThan(400);
    // the deps stage moves packages npm nested under a workspace to the root (a bundle looks
    // there): none may meet a root package of the same name
    const nested = [...production].filter((path) =>
      /^(libs|services)\/[^/]+\/node_modules\/(@[^/]+\/)?[^/]+$/.test(path),
    );
    for (const path of nested)
      expect(production.has(`node_modules/${packageName(path)}`), `${path} and node_modules/${packageName(path)}`).toBe(
        false,
      );
  });

  it("every bundle's npm imports are production dependencies", async () => {
    const lock = await readLockfile(ROOT);
    const production = productionPackages(lock);
    const installed = new Set(
      [...production]
        .filter((path) => /(^|\/)node_modules\//.test(path) && !path.startsWith('node_modules/@flotilla/'))
        .map(packageName),
    );
    const builtins = new Set([...builtinModules, ...builtinModules.map((name) => `node:${name}`)]);
    for (const service of await bundledServices()) {
      const bundle = await readFile(await bundleService(join(ROOT, 'services', service, 'src', 'main.ts')), 'utf8');
      const specifiers = new Set(
        [
          ...bundle.matchAll(
            /(?:^|\n)\s*import\s+(?:[^'"]*?\s+from\s+)?["']([^"'./][^"']*)["']|\bimport\(\s*["']([^"'./][^"']*)["']\s*\)/g,
          ),
        ].map((match) => match[1] ?? match[2]!),
      );
      expect(specifiers.size, service).toBeGreaterThan(0);
      for (const specifier of specifiers) {
        if (builtins.has(specifier) || specifier.startsWith('node:')) continue;
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
        expect(installed.has(name), `${service} imports ${specifier}, not a production dependency`).toBe(true);
      }
    }
  }, 120_000);

  it.skipIf(!engine)(
    'builds and starts each service to ready (where a Docker engine is reachable)',
    async () => {
      const tag = `flotilla-test:${Date.now()}`;
      await run('docker', ['build', '-f', join(ROOT, 'deploy', 'Dockerfile'), '-t', tag, ROOT], {
        timeout: 1_500_000,
        maxBuffer: 64 * 1024 * 1024,
      });
      try {
        const { stdout } = await run('docker', [
          'run',
          '--rm',
          '--entrypoint',
          'sh',
          tag,
          '-c',
          'ls node_modules; stat -c %U /data; cat /proc/1/comm',
        ]);
        for (const tool of DEV_TOOLS) expect(stdout.split('\n')).not.toContain(tool);
        expect(stdout).toContain('node');
      } finally {
        await run('docker', ['rmi', '-f', tag]).catch(() => undefined);
      }
    },
    1_800_000,
  );
});

type ComposeService = {
  image?: string;
  build?: { dockerfile?: string };
  command?: string[];
  environment?: Record<string, string>;
  secrets?: string[];
  profiles?: string[];
};

describe('compose', () => {
  it('validates: one image, the bundles the image has, NATS with the permission matrix, settings passed through', async () => {
    const compose = parse(await readFile(join(ROOT, 'docker-compose.yml'), 'utf8'), {
      merge: true,
      maxAliasCount: -1,
    }) as {
      services: Record<string, ComposeService>;
      secrets: Record<string, { file: string }>;
      volumes: Record<string, unknown>;
    };
    const services = compose.services;
    const bundled = await bundledServices();
    const flotilla = Object.entries(services).filter(([, service]) => service.build !== undefined);
    expect(new Set(flotilla.map(([, service]) => service.image)).size).toBe(1);
    for (const [name, service] of flotilla) {
      expect(service.build?.dockerfile, name).toBe('deploy/Dockerfile');
      const bundle = /^services\/([^/]+)\/dist\/main\.mjs$/.exec(service.command?.[0] ?? '')?.[1];
      expect(bundle, `${name}: ${service.command?.join(' ')}`).toBe(name);
      expect(bundled).toContain(bundle);
      const env = service.environment ?? {};
      expect(env['FLOTILLA_NATS_URL'], name).toBe('nats://nats:4222');
      // its own NATS user and password, and no one else's
      expect(env['FLOTILLA_NATS_USER'], name).toBe(name);
      expect(service.secrets, name).toEqual([`nats_${name.replaceAll('-', '_')}`]);
      expect(compose.secrets[`nats_${name.replaceAll('-', '_')}`]?.file).toBe(
        `./.flotilla-compose/users/${name}.password`,
      );
      const agent = ['gateway', 'step-worker', 'condenser'].includes(name);
      expect('FLOTILLA_AGENT' in env, `${name} FLOTILLA_AGENT`).toBe(agent);
      expect('FLOTILLA_AGENT_CATALOG' in env, `${name} FLOTILLA_AGENT_CATALOG`).toBe(agent);
      if (agent) expect(env['FLOTILLA_AGENT']).toBe('${FLOTILLA_AGENT:-}');
      expect('OPENAI_API_KEY' in env, `${name} model key`).toBe(name === 'step-worker' || name === 'condenser');
      expect('FLOTILLA_SECRETS_KEY' in env, `${name} secrets key`).toBe(
        ['gateway', 'step-worker', 'condenser', 'tool-runner', 'webhooks'].includes(name),
      );
    }
    for (const required of ['gateway', 'step-worker', 'tool-runner', 'condenser', 'projector', 'webhooks'])
      expect(services[required], required).toBeDefined();
    // the sink is an option
    if (services['pg-sink'] !== undefined) expect(services['pg-sink'].profiles).toEqual(['analytics']);
    // NATS reads the config npm run nats-config writes (the permission matrix's users)
    const nats = services['nats'] as ComposeService & { command: string[] };
    expect(nats.command.slice(0, 2)).toEqual(['-c', '/run/secrets/nats_conf']);
    expect(nats.command).toContain('-js');
    expect(compose.secrets['nats_conf']?.file).toBe('./.flotilla-compose/nats.conf');
    // the sandbox kind is a setting of the tool runner
    expect(services['tool-runner']?.environment?.['FLOTILLA_SANDBOX']).toBe('${FLOTILLA_SANDBOX:-bwrap}');
  });
});
