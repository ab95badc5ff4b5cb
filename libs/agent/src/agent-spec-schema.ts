import { z } from 'zod';
import { AGENT_SPEC_VERSION, AgentSpec } from './agent-spec.js';

export const AGENT_SPEC_SCHEMA_ID = `urn:flotilla:agent-spec:v${AGENT_SPEC_VERSION}`;
export const AGENT_SPEC_SCHEMA_FILE_NAME = `flotilla-agent-spec.v${AGENT_SPEC_VERSION}.schema.json`;

/**
 * The JSON Schema (draft 2020-12) of an agent spec as the log carries it (an `agent_spec` event's
 * `spec`), published beside the events' schema for readers in other languages. Deterministic, so
 * the committed file can be compared with a fresh build. A cross-field rule the JSON Schema cannot
 * state (a profile or a key secret, not both, for the model and each fallback) is in its `$comment`.
 */
export function buildAgentSpecSchema(): Record<string, unknown> {
  const { $schema: _schema, ...schema } = z.toJSONSchema(AgentSpec, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: AGENT_SPEC_SCHEMA_ID,
    title: `Flotilla agent spec, version ${AGENT_SPEC_VERSION}`,
    description:
      "How a conversation's steps are made: its model (never a key), tools, policies, limits, condenser and the rest, as an agent_spec event records it.",
    $comment:
      'Also: profile and apiKeySecret are not both given, in llm and in each of llm.fallbacks. The events schema checks only that a spec is an object with a version; this schema is the rest.',
    ...schema,
  };
}

/** The schema file's exact text: two-space JSON with a trailing newline. */
export function renderAgentSpecSchema(): string {
  return `${JSON.stringify(buildAgentSpecSchema(), null, 2)}\n`;
}
