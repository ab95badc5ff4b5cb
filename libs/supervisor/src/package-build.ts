import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { npmPackagesExternal } from './service-bundle.js';

const run = promisify(execFile);

/**
 * A package of the workspace's code for use outside it, on plain `node` (no TypeScript loader):
 * its entry points bundled to ES modules with the workspace's `@flotilla/*` libraries inside,
 * npm packages left as dependencies (at the versions the workspace installs), the declarations
 * `tsc --build` emits for the entries' libraries beside them (the `@flotilla/*` specifiers in
 * them made relative), and a package.json whose version is Flotilla's.
 */
export type PackageDefinition = {
  /** The package's name on npm. */
  readonly name: string;
  readonly description: string;
  /** Its subpath exports: `.` → the source file bundled for it. */
  readonly exports?: Readonly<Record<string, string>>;
  /** A command: its name and the source file bundled for it (a `#!/usr/bin/env node` script). */
  readonly bin?: { readonly name: string; readonly source: string };
  /** The workspace library whose `tsc --build` declarations are the exports' types (its dist/ mirrors its src/). */
  readonly typesFrom?: string;
  /** The package's README.md. */
  readonly readme: string;
};

export type BuiltPackage = {
  readonly name: string;
  readonly tarball: string;
  readonly dependencies: Readonly<Record<string, string>>;
};

/** The typed REST + WebSocket client, and the `flotilla` command. */
export const PACKAGES: readonly PackageDefinition[] = [
  {
    name: '@flotilla/client',
    description: "Typed client of Flotilla's REST and WebSocket API",
    exports: { '.': 'libs/client/src/index.ts', './node': 'libs/client/src/node.ts' },
    typesFrom: 'libs/client',
    readme: [
      '# @flotilla/client',
      '',
      "The typed client of Flotilla's gateway: REST calls and the live event stream of a conversation.",
      '',
      '```js',
      "import { FlotillaClient } from '@flotilla/client';",
      "import { NodeWebSocket } from '@flotilla/client/node';",
      '',
      "const client = new FlotillaClient({ baseUrl: 'http://localhost:8080', apiKey: process.env.FLOTILLA_API_KEY, WebSocket: NodeWebSocket });",
      'const { items } = await client.listConversations();',
      '```',
      '',
    ].join('\n'),
  },
  {
    name: '@flotilla/cli',
    description: 'The flotilla command: drive conversations through a Flotilla gateway',
    bin: { name: 'flotilla', source: 'services/cli/src/main.ts' },
    readme: [
      '# @flotilla/cli',
      '',
      'The `flotilla` command. `flotilla --help` lists the commands; `flotilla <command> --help` shows one.',
      '',
    ].join('\n'),
  },
];

/**
 * Builds each package into a tarball in `outDir` (`npm pack`), from the workspace at `root`.
 * `version` is the packages' version (Flotilla's).
 */
export async function buildPackages(
  root: string,
  outDir: string,
  version: string,
  definitions: readonly PackageDefinition[] = PACKAGES,
): Promise<BuiltPackage[]> {
  await mkdir(outDir, { recursive: true });
  const built: BuiltPackage[] = [];
  for (const definition of definitions) built.push(await buildPackage(root, outDir, version, definition));
  return built;
}

async function buildPackage(
  root: string,
  outDir: string,
  version: string,
  definition: PackageDefinition,
): Promise<BuiltPackage> {
  const stage = await mkdtemp(join(tmpdir(), 'flotilla-package-'));
  try {
    const entryPoints: Record<string, string> = {};
    for (const [subpath, source] of Object.entries(definition.exports ?? {}))
      entryPoints[outputName(subpath)] = join(root, source);
    if (definition.bin) entryPoints[definition.bin.name] = join(root, definition.bin.source);
    const result = await build({
      absWorkingDir: root,
      entryPoints,
      bundle: true,
      splitting: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outdir: join(stage, 'dist'),
      metafile: true,
      logLevel: 'silent',
      plugins: [npmPackagesExternal],
      ...(definition.bin ? { banner: { js: '#!/usr/bin/env node' } } : {}),
    }).catch((error: unknown) => {
      throw new Error(`bundling ${definition.name} failed: ${(error as Error).message}`, { cause: error });
    });

    const dependencies = new Map<string, string>();
    for (const [input, { imports }] of Object.entries(result.metafile.inputs)) {
      for (const imported of imports) {
        if (!imported.external || imported.path.startsWith('node:')) continue;
        await addDependency(dependencies, packageName(imported.path), resolve(root, input), root);
      }
    }

    const exports: Record<string, { types?: string; import: string }> = {};
    if (definition.typesFrom) {
      const types = await copyDeclarations(
        root,
        definition.typesFrom,
        Object.values(definition.exports ?? {}),
        join(stage, 'dist', 'types'),
      );
      for (const name of types.dependencies)
        await addDependency(dependencies, name, join(root, definition.typesFrom, 'package.json'), root);
      for (const [subpath, source] of Object.entries(definition.exports ?? {})) {
        exports[subpath] = {
          types: `./dist/types/${types.entryOf(source)}`,
          import: `./dist/${outputName(subpath)}.js`,
        };
      }
    } else {
      for (const subpath of Object.keys(definition.exports ?? {}))
        exports[subpath] = { import: `./dist/${outputName(subpath)}.js` };
    }

    // the packages run on the Node.js versions Flotilla itself declares (the workspace's engines)
    const { engines } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
    const manifest = {
      name: definition.name,
      version,
      description: definition.description,
      license: 'Apache-2.0',
      type: 'module',
      engines: { node: engines.node },
      ...(Object.keys(exports).length > 0 ? { exports } : {}),
      ...(definition.bin ? { bin: { [definition.bin.name]: `./dist/${definition.bin.name}.js` } } : {}),
      files: ['dist'],
      dependencies: Object.fromEntries([...dependencies].sort(([a], [b]) => a.localeCompare(b))),
    };
    await writeFile(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    await writeFile(join(stage, 'README.md'), definition.readme);
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', resolve(outDir)], { cwd: stage });
    const [packed] = JSON.parse(stdout) as { filename: string }[];
    if (!packed) throw new Error(`npm pack of ${definition.name} reported no tarball`);
    return {
      name: definition.name,
      tarball: join(resolve(outDir), packed.filename),
      dependencies: manifest.dependencies,
    };
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

/** `.` → `index`, `./node` → `node`. */
const outputName = (subpath: string): string =>
  subpath === '.' ? 'index' : subpath.replace(/^\.\//, '').replaceAll('/', '-');

/** `@scope/name/sub.js` → `@scope/name`; `name/sub` → `name`. */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** The version of `name` that the file `from` loads: the node_modules nearest to it (npm's lookup), up to `root`. */
async function addDependency(
  dependencies: Map<string, string>,
  name: string,
  from: string,
  root: string,
): Promise<void> {
  let directory = dirname(from);
  for (;;) {
    const manifest = join(directory, 'node_modules', name, 'package.json');
    if (await exists(manifest)) {
      const { version } = JSON.parse(await readFile(manifest, 'utf8')) as { version: string };
      const known = dependencies.get(name);
      if (known !== undefined && known !== version)
        throw new Error(`the package needs ${name} at both ${known} and ${version}`);
      dependencies.set(name, version);
      return;
    }
    if (resolve(directory) === resolve(root) || dirname(directory) === directory)
      throw new Error(`${name}, imported by ${relative(root, from)}, is not installed`);
    directory = dirname(directory);
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

const SPECIFIER = /(\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)(['"])([^'"]+)\2/g;

/**
 * Copies the declarations the entries' types need (their `.d.ts` files and, transitively, those
 * of the `@flotilla/*` libraries they import) from each library's `tsc --build` output into
 * `into/<library>/`, with `@flotilla/*` specifiers rewritten to relative paths. Returns the npm
 * packages the declarations import and where each entry's declaration landed.
 */
async function copyDeclarations(
  root: string,
  library: string,
  sources: readonly string[],
  into: string,
): Promise<{ dependencies: Set<string>; entryOf: (source: string) => string }> {
  await run(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '--build', join(root, library, 'tsconfig.json')],
    { cwd: root },
  );
  const dependencies = new Set<string>();
  // a source file (libs/x/src/a/b.ts) → where it lands in the package (x/a/b.d.ts)
  const copiedPath = (source: string): string => {
    const [, name, , ...rest] = relative(root, source).split('/');
    return join(name!, ...rest).replace(/\.ts$/, '.d.ts');
  };
  const pending = sources.map((source) => join(root, source));
  const seen = new Set<string>();
  while (pending.length > 0) {
    const source = pending.pop()!;
    if (seen.has(source)) continue;
    seen.add(source);
    const declaration = declarationOf(root, source);
    const text = await readFile(declaration, 'utf8').catch((error: unknown) => {
      throw new Error(
        `no declarations at ${relative(root, declaration)} (for ${relative(root, source)}): does ${library} build with tsc --build?`,
        { cause: error },
      );
    });
    const target = join(into, copiedPath(source));
    const rewritten = text.replace(SPECIFIER, (whole, keyword: string, quote: string, specifier: string) => {
      if (specifier.startsWith('.')) {
        pending.push(resolve(dirname(source), specifier.replace(/\.js$/, '.ts')));
        return whole;
      }
      if (!specifier.startsWith('@flotilla/')) {
        if (!specifier.startsWith('node:')) dependencies.add(packageName(specifier));
        return whole;
      }
      const name = packageName(specifier);
      const libraryDir = join(root, 'libs', name.slice('@flotilla/'.length));
      const imported = join(
        libraryDir,
        exportedSource(libraryDir, specifier === name ? '.' : `.${specifier.slice(name.length)}`),
      );
      pending.push(imported);
      const path = posix.relative(dirname(target), join(into, copiedPath(imported))).replace(/\.d\.ts$/, '.js');
      return `${keyword}${quote}${path.startsWith('.') ? path : `./${path}`}${quote}`;
    });
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, rewritten);
  }
  return { dependencies, entryOf: (source) => copiedPath(join(root, source)) };
}

type Manifest = { exports?: Record<string, string> };
type TsConfig = { compilerOptions?: { rootDir?: string; outDir?: string } };
const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

/** Where `tsc --build` puts a workspace source file's declaration: its library's outDir, mirroring its rootDir. */
function declarationOf(root: string, source: string): string {
  const [libs, name] = relative(root, source).split('/');
  const libraryDir = join(root, libs!, name!);
  const { rootDir = '.', outDir = 'dist' } =
    readJson<TsConfig>(join(libraryDir, 'tsconfig.json')).compilerOptions ?? {};
  return join(libraryDir, outDir, relative(join(libraryDir, rootDir), source)).replace(/\.ts$/, '.d.ts');
}

/** The source file a workspace library exports at `subpath` (`./src/index.ts` → `src/index.ts`), read from its package.json. */
function exportedSource(libraryDir: string, subpath: string): string {
  const source = readJson<Manifest>(join(libraryDir, 'package.json')).exports?.[subpath];
  if (typeof source !== 'string') throw new Error(`${libraryDir} exports nothing at ${subpath}`);
  return source.replace(/^\.\//, '');
}
