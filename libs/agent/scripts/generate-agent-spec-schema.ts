/**
 * Writes libs/agent/schema/flotilla-agent-spec.v<N>.schema.json from the zod schema.
 * Run after changing the agent spec: `npm run schema` (a test fails while the file is stale).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_SPEC_SCHEMA_FILE_NAME, renderAgentSpecSchema } from '../src/agent-spec-schema.js';

const target = join(import.meta.dirname, '..', 'schema', AGENT_SPEC_SCHEMA_FILE_NAME);
writeFileSync(target, renderAgentSpecSchema());
process.stdout.write(`wrote ${target}\n`);
