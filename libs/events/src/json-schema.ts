import { z } from 'zod';
import { Commit } from './commit.js';
import { Event } from './event.js';
import { ConversationId, EventId, TenantId } from './ids.js';
import { ContentPart, ImageContent, Reasoning, TextContent, ThinkingBlock } from './schemas/content.js';
import {
  CondensationEvent,
  CondensationRequestEvent,
  ConversationErrorEvent,
  ConversationStatus,
  HookExecutionEvent,
  InterruptEvent,
  LlmFallback,
  LlmUsageEvent,
  PauseEvent,
  StateChangeEvent,
} from './schemas/control-events.js';
import {
  ActionEvent,
  AgentErrorEvent,
  ApprovalEvent,
  ExecutionStartedEvent,
  MessageEvent,
  ObservationEvent,
  SecurityRisk,
  SystemPromptEvent,
  ToolSpec,
  UserRejectionEvent,
} from './schemas/conversation-events.js';
import { EventSource, ProtocolVersionField, Timestamp } from './schemas/envelope.js';
import { SecretChangedEvent, SecretName } from './schemas/secret-events.js';
import { AgentSpecDocument, AgentSpecEvent, SpecName } from './schemas/agent-spec-events.js';
import { McpServerName, McpToolsEvent } from './schemas/mcp-tools-events.js';
import { WorkspaceContextEvent, WorkspacePath } from './schemas/workspace-context-events.js';
import { SubAgentName, SubagentStartedEvent, SubagentTaskEvent } from './schemas/subagent-events.js';
import { BranchEvent } from './schemas/branch-events.js';
import { WorkspaceFileEvent } from './schemas/workspace-file-events.js';
import { CONTENT_FIELDS, CURRENT_PROTOCOL_VERSION, laterEventTypes, versionsSince } from './version.js';
import { STORED_IMAGE_MEDIA_TYPES } from './schemas/content.js';

export const JSON_SCHEMA_ID = `urn:flotilla:events:v${CURRENT_PROTOCOL_VERSION}`;
export const JSON_SCHEMA_FILE_NAME = `flotilla-events.v${CURRENT_PROTOCOL_VERSION}.schema.json`;

type JsonSchema = z.core.JSONSchema.BaseSchema;

/** A commit as other languages see it: the same envelope, with its events typed. */
const CommitDocument = Commit.extend({ events: z.array(Event).min(1).max(1024) });

/** Every schema that gets a named `$defs` entry, in output order. */
const NAMED_SCHEMAS = {
  Event,
  Commit: CommitDocument,
  SystemPromptEvent,
  MessageEvent,
  ActionEvent,
  ObservationEvent,
  AgentErrorEvent,
  UserRejectionEvent,
  ApprovalEvent,
  ExecutionStartedEvent,
  CondensationEvent,
  CondensationRequestEvent,
  StateChangeEvent,
  ConversationErrorEvent,
  PauseEvent,
  InterruptEvent,
  HookExecutionEvent,
  LlmUsageEvent,
  LlmFallback,
  SecretChangedEvent,
  AgentSpecEvent,
  AgentSpecDocument,
  McpToolsEvent,
  McpServerName,
  WorkspaceContextEvent,
  WorkspacePath,
  SubagentStartedEvent,
  SubagentTaskEvent,
  SubAgentName,
  BranchEvent,
  WorkspaceFileEvent,
  ContentPart,
  TextContent,
  ImageContent,
  ThinkingBlock,
  Reasoning,
  ToolSpec,
  SecurityRisk,
  ConversationStatus,
  SecretName,
  SpecName,
  EventSource,
  ProtocolVersion: ProtocolVersionField,
  Timestamp,
  EventId,
  TenantId,
  ConversationId,
} satisfies Record<string, z.ZodType>;

/**
 * The zod refinements (cross-field rules) and their JSON Schema equivalents. A refinement
 * without an entry here makes `buildJsonSchema` throw, so the published schema can never
 * silently accept what the zod schema rejects.
 */
const REFINEMENTS = new Map<z.core.$ZodType, JsonSchema>([
  [
    ImageContent,
    {
      $comment:
        'Exactly one of url, data or sha256; inline data needs its media_type; a stored image (sha256) its bytes and a media_type of png, jpeg, gif or webp; bytes and name only with sha256.',
      oneOf: [{ required: ['url'] }, { required: ['data'] }, { required: ['sha256'] }],
      dependentRequired: { data: ['media_type'], sha256: ['media_type', 'bytes'], bytes: ['sha256'], name: ['sha256'] },
      if: { required: ['sha256'] },
      then: { properties: { media_type: { type: 'string', enum: [...STORED_IMAGE_MEDIA_TYPES] } } },
    },
  ],
  [MessageEvent, storedImagesNeedVersion4(MessageEvent)],
  [ActionEvent, storedImagesNeedVersion4(ActionEvent)],
  [ObservationEvent, storedImagesNeedVersion4(ObservationEvent)],
  [
    AgentErrorEvent,
    {
      $comment: 'tool_call_id and tool_name go together; action_id only with tool_call_id.',
      dependentRequired: { tool_call_id: ['tool_name'], tool_name: ['tool_call_id'], action_id: ['tool_call_id'] },
    },
  ],
  [
    CondensationEvent,
    {
      $comment: 'summary and summary_offset go together.',
      dependentRequired: { summary: ['summary_offset'], summary_offset: ['summary'] },
    },
  ],
  [
    StateChangeEvent,
    {
      $comment: 'A state change sets at least one of status, title, tags, settings_ref.',
      anyOf: [
        { required: ['status'] },
        { required: ['title'] },
        { required: ['tags'] },
        { required: ['settings_ref'] },
      ],
    },
  ],
  [
    LlmUsageEvent,
    {
      $comment: 'An llm_usage naming the fallback that made its call exists from protocol version 5 on.',
      if: { required: ['fallback'] },
      then: { properties: { v: { enum: versionsSince(5) } } },
    },
  ],
  [
    McpToolsEvent,
    {
      $comment: 'A server that failed (error) lists no tools.',
      if: { required: ['error'] },
      then: { properties: { tools: { type: 'array', maxItems: 0 } } },
    },
  ],
]);

/** The version rule of an event type with content lists: one holding a stored image carries v4 or later (`protocolVersionOf`). */
function storedImagesNeedVersion4(schema: z.ZodObject): JsonSchema {
  const fields = CONTENT_FIELDS.filter((field) => field in schema.shape);
  return {
    $comment: 'An event holding a stored image (an image part with sha256) exists from protocol version 4 on.',
    if: {
      anyOf: fields.map((field) => ({
        required: [field],
        properties: { [field]: { type: 'array', contains: { type: 'object', required: ['sha256'] } } },
      })),
    },
    then: { properties: { v: { enum: versionsSince(4) } } },
  };
}

const ROOT_COMMENT =
  'Generated from the zod schemas of @flotilla/events (npm run schema); do not edit by hand. ' +
  'Validate one event against #/$defs/Event and one commit (one JetStream message) against #/$defs/Commit. ' +
  'The cross-field rules of the zod schemas are expressed with oneOf, anyOf and dependentRequired. ' +
  'Rules this schema cannot express, which readers must check themselves: in a commit, events[i].seq equals ' +
  'first_seq + i, every event has the tenant and conversation of its commit, and no event has a v greater than ' +
  "its commit's. An event type carries at least the version that introduced it (" +
  laterEventTypes()
    .map(([type, version]) => `${type} ${version}`)
    .join(', ') +
  "; every other type 1) and may carry any later one; an event holding a stored image carries at least 4, an llm_usage with a fallback at least 5. An agent_spec event's spec is checked here only as an object with a " +
  'version; the agent spec has its own published schema (flotilla-agent-spec.v<N>.schema.json). ' +
  'The format keyword is an ' +
  'annotation only; the pattern of each date-time enforces UTC with a Z suffix. A reader must reject a v it ' +
  'does not support, never fall back to reading it as an older version.';

function hasRefinement(schema: z.core.$ZodType): boolean {
  return (schema._zod.def.checks ?? []).some((check) => check._zod.def.check === 'custom');
}

/**
 * Builds the JSON Schema (draft 2020-12) document published for consumers in other
 * languages: one document, with `$defs` for Event, Commit and everything they name.
 * The output is deterministic, so the committed file can be compared with a fresh build.
 */
export function buildJsonSchema(): JsonSchema {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(NAMED_SCHEMAS)) registry.add(schema, { id });

  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    unrepresentable: 'throw',
    io: 'output',
    uri: (id) => `#/$defs/${id}`,
    override: ({ zodSchema, jsonSchema }) => {
      if (!hasRefinement(zodSchema)) return;
      const mapped = REFINEMENTS.get(zodSchema);
      if (mapped === undefined) {
        throw new Error(
          'A zod schema has a refinement with no JSON Schema equivalent in REFINEMENTS (libs/events/src/json-schema.ts). ' +
            'Add one, so that the published schema keeps rejecting what parseEvent rejects.',
        );
      }
      Object.assign(jsonSchema, structuredClone(mapped));
    },
  });

  const eventMembers = Event.options as readonly z.ZodType[];
  const named = new Set<z.ZodType>(Object.values(NAMED_SCHEMAS));
  const unnamed = eventMembers.filter((member) => !named.has(member));
  if (unnamed.length > 0)
    throw new Error(`every Event member needs a $defs name in NAMED_SCHEMAS (${unnamed.length} missing)`);

  const definitions: Record<string, JsonSchema> = {};
  for (const id of Object.keys(NAMED_SCHEMAS)) {
    const { $schema: _schema, $id: _id, ...definition } = schemas[id] ?? {};
    definitions[id] = definition;
  }

  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: JSON_SCHEMA_ID,
    title: `Flotilla events, protocol version ${CURRENT_PROTOCOL_VERSION}`,
    description:
      'The event protocol of Flotilla: the events of a conversation log and the commits (one JetStream message each) that carry them.',
    $comment: ROOT_COMMENT,
    anyOf: [{ $ref: '#/$defs/Event' }, { $ref: '#/$defs/Commit' }],
    $defs: definitions,
  };
}

/** The schema file's exact text: two-space JSON with a trailing newline. */
export function renderJsonSchema(): string {
  return `${JSON.stringify(buildJsonSchema(), null, 2)}\n`;
}
