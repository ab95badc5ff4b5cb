// Writes what is derived from the permission matrix (libs/bus): its table in docs/operations.md
// (between the markers) and the official NATS chart's values in helm/flotilla/files/nats-values.json.
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { chartNatsValues, replacePermissionsBlock } from '../src/permissions-table.js';

const docs = fileURLToPath(new URL('../../../docs/operations.md', import.meta.url));
await writeFile(docs, replacePermissionsBlock(await readFile(docs, 'utf8')));
const values = fileURLToPath(new URL('../../../helm/flotilla/files/nats-values.json', import.meta.url));
await writeFile(values, `${JSON.stringify(chartNatsValues(), null, 2)}\n`);
console.log(`permission matrix written to ${docs} and ${values}`);
