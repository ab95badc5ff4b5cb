import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPackages } from './package-build.js';

/**
 * `npm run packages [-- OUT_DIR]`: packs the typed client and the CLI for use outside the
 * workspace (default `dist/packages`). Prints each tarball and its npm dependencies.
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const outDir = process.argv[2] ?? join(ROOT, 'dist', 'packages');
// the workspace's version, which a test keeps equal to FLOTILLA_VERSION
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

for (const built of await buildPackages(ROOT, outDir, version)) {
  process.stdout.write(
    `${built.name}: ${relative(process.cwd(), built.tarball)}\n  dependencies: ${
      Object.entries(built.dependencies)
        .map(([name, version]) => `${name}@${version}`)
        .join(' ') || '(none)'
    }\n`,
  );
}
