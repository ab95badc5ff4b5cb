import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleService } from './service-bundle.js';

/**
 * `npm run bundle`: bundles each long-running service for plain `node` (the image does this at
 * build time; the launcher and the tests do it on demand). Prints where each bundle is.
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SERVICES = [
  'step-worker',
  'tool-runner',
  'condenser',
  'projector',
  'gateway',
  'pg-sink',
  'webhooks',
  'delegator',
];

const started = performance.now();
for (const service of SERVICES) {
  const bundle = await bundleService(join(ROOT, 'services', service, 'src', 'main.ts'));
  process.stdout.write(`${service}: ${relative(process.cwd(), bundle)}\n`);
}
process.stdout.write(`bundled in ${Math.round(performance.now() - started)} ms\n`);
