export {
  CURRENT_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  commitVersionOf,
  protocolVersionOf,
  versionsSince,
} from './version.js';
export type { ProtocolVersion } from './version.js';
export { ProtocolError, ProtocolErrorCode } from './errors.js';
export type { ProtocolIssue } from './errors.js';
export { ConversationId, EventId, TenantId, isSubjectToken, newId } from './ids.js';
export {
  ContentPart,
  ImageContent,
  Reasoning,
  Sha256,
  STORED_IMAGE_MEDIA_TYPES,
  StoredImageMediaType,
  TextContent,
  ThinkingBlock,
} from './schemas/content.js';
export { MAX_IMAGE_BYTES, MAX_IMAGES_PER_MESSAGE, sniffImageType } from './image-type.js';
export { EventSource, ProtocolVersionField, Timestamp, versionField } from './schemas/envelope.js';
export { SecretChangedEvent, SecretName } from './schemas/secret-events.js';
export { AgentSpecDocument, AgentSpecEvent, SpecName } from './schemas/agent-spec-events.js';
export { McpServerName, McpToolsEvent } from './schemas/mcp-tools-events.js';
export { SubAgentName, SubagentStartedEvent, SubagentTaskEvent } from './schemas/subagent-events.js';
export { BranchEvent } from './schemas/branch-events.js';
export { WorkspaceFileEvent } from './schemas/workspace-file-events.js';
export {
  AgentSkill,
  ContextFile,
  KnowledgeSkill,
  PathRule,
  WorkspaceContextEvent,
  WorkspacePath,
} from './schemas/workspace-context-events.js';
export {
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
export {
  CondensationEvent,
  CondensationRequestEvent,
  ConversationErrorEvent,
  ConversationStatus,
  HookExecutionEvent,
  InterruptEvent,
  LlmFallback,
  LlmUsageEvent,
  OnBusy,
  PauseEvent,
  StateChangeEvent,
} from './schemas/control-events.js';
export { EVENT_TYPES, Event, assertSupportedVersion, describeIssues, parseEvent, safeParseEvent } from './event.js';
export type { EventDraft, EventOfType, EventType, ParseResult } from './event.js';
export { COMMIT_CONTENT_TYPE, Commit, CommitHeader, commitEventTypes, parseCommit } from './commit.js';
export { draftEvent } from './draft.js';
export {
  MAX_POSITION,
  positionalId,
  positionalIdIssues,
  positionOfEventId,
  withPositionalIds,
} from './positional-ids.js';
export { JSON_SCHEMA_FILE_NAME, JSON_SCHEMA_ID, buildJsonSchema, renderJsonSchema } from './json-schema.js';
export type { DraftContext } from './draft.js';
export type { ParseCommitOptions } from './commit.js';
export { isValidEvent, prepareValidation } from './fast-validation.js';
export { readCommit } from './read-commit.js';
