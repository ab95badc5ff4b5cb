/**
 * Writes libs/events/schema/flotilla-events.v<N>.schema.json from the zod schemas.
 * Run after changing a schema: `npm run schema` (a test fails while the file is stale).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { JSON_SCHEMA_FILE_NAME, renderJsonSchema } from '../src/json-schema.js';

const target = join(import.meta.dirname, '..', 'schema', JSON_SCHEMA_FILE_NAME);
writeFileSync(target, renderJsonSchema());
process.stdout.write(`wrote ${target}\n`);
