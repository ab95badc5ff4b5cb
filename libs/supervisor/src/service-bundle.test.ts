import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleService } from './service-bundle.js';

const run = promisify(execFile);
// inside the repository, so the bundle finds node_modules as a service's does (tmp/ is ignored by git)
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const dir = join(ROOT, 'tmp', `bundle-test-${randomUUID()}`);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('bundleService', () => {
  it('bundles the workspace libraries, leaves npm packages external, runs under plain node, and rebuilds only when an input changed', async () => {
    const entry = join(dir, 'src', 'main.ts');
    await mkdir(join(dir, 'src'), { recursive: true });
    const source = (greeting: string): string =>
      [
        "import { newId } from '@flotilla/events';",
        "import { z } from 'zod';",
        'const id: string = newId();',
        `console.log(JSON.stringify({ greeting: z.string().parse('${greeting}'), idLength: id.length }));`,
      ].join('\n');
    await writeFile(entry, source('hello'));

    const bundle = await bundleService(entry);
    expect(bundle).toBe(join(dir, 'dist', 'main.mjs'));
    const { stdout } = await run(process.execPath, [bundle]);
    expect(JSON.parse(stdout)).toEqual({ greeting: 'hello', idLength: 36 });
    // zod stays an import of the package; the workspace's own code is inside
    const text = await import('node:fs/promises').then((fs) => fs.readFile(bundle, 'utf8'));
    expect(text).toMatch(/from "zod"/);
    expect(text).toContain('libs/events/src/');

    // unchanged inputs: the same file is reused
    const built = (await stat(bundle)).mtimeMs;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await bundleService(entry)).toBe(bundle);
    expect((await stat(bundle)).mtimeMs).toBe(built);

    // a changed input: built again
    await writeFile(entry, source('hello again'));
    await bundleService(entry);
    expect(JSON.parse((await run(process.execPath, [bundle])).stdout)).toEqual({
      greeting: 'hello again',
      idLength: 36,
    });
  });

  it('says which entry failed to bundle', async () => {
    // beside another src/ than the first test's entry, with the same name: the same bundle path
    const entry = join(dir, 'broken', 'main.ts');
    await mkdir(join(dir, 'broken'), { recursive: true });
    await writeFile(entry, "import { nothing } from './missing.js';\nconsole.log(nothing);\n");
    await expect(bundleService(entry)).rejects.toThrow(/bundling .*broken\/main\.ts failed: .*missing/s);
  });
});
