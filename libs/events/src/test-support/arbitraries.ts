import fc from 'fast-check';
import type { Event, EventOfType, EventType } from '../event.js';
import type { ContentPart, ImageContent, Reasoning, TextContent, ThinkingBlock } from '../schemas/content.js';
import type { ToolSpec } from '../schemas/conversation-events.js';
import { protocolVersionOf, versionsSince } from '../version.js';

/** Random valid events, one arbitrary per type, for property tests. */

type EnvelopeKey = 'v' | 'id' | 'seq' | 'tenant' | 'conversation' | 'source' | 'timestamp' | 'parent' | 'type';
type Payload<T extends EventType> = Omit<EventOfType<T>, EnvelopeKey>;

export const subjectToken = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);
export const eventId = fc.stringMatching(/^[A-Za-z0-9_:.-]{1,128}$/);
const nonEmpty = fc.string({ minLength: 1 });
const count = fc.nat({ max: 10_000_000 });
const timestamp = fc
  .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2199-12-31T23:59:59Z'), noInvalidDate: true })
  .map((date) => date.toISOString());

/** Object keys that are plain data everywhere (no `__proto__`, which JSON and JS objects treat differently). */
const jsonKey = fc.string({ maxLength: 12 }).filter((key) => key !== '__proto__');
/** Any JSON value, normalised through JSON so that e.g. -0 does not appear. */
const jsonValue = fc
  .jsonValue({ maxDepth: 3 })
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown)
  .filter((value) => !JSON.stringify(value).includes('"__proto__"'));
const jsonObject = fc.dictionary(jsonKey, jsonValue, { maxKeys: 5, noNullPrototype: true });

const textContent: fc.Arbitrary<TextContent> = fc.record(
  { type: fc.constant('text'), text: fc.string() },
  { noNullPrototype: true },
);
const mediaType = fc.constantFrom('image/png', 'image/jpeg', 'image/webp', 'image/gif', 'image/svg+xml');
const imageContent: fc.Arbitrary<ImageContent> = fc.oneof(
  fc.record(
    { type: fc.constant('image'), url: fc.webUrl(), media_type: mediaType },
    { noNullPrototype: true, requiredKeys: ['type', 'url'] },
  ),
  fc.record(
    { type: fc.constant('image'), data: fc.base64String({ minLength: 4 }), media_type: mediaType },
    { noNullPrototype: true },
  ),
);
const contentPart: fc.Arbitrary<ContentPart> = fc.oneof(textContent, imageContent);
const content = fc.array(contentPart, { maxLength: 4 });

const thinkingBlock: fc.Arbitrary<ThinkingBlock> = fc.oneof(
  fc.record(
    { type: fc.constant('thinking'), thinking: fc.string(), signature: fc.base64String() },
    { noNullPrototype: true },
  ),
  fc.record({ type: fc.constant('redacted_thinking'), data: fc.base64String() }, { noNullPrototype: true }),
);
const reasoning: fc.Arbitrary<Reasoning> = fc.record(
  {
    text: fc.string(),
    thinking_blocks: fc.array(thinkingBlock, { maxLength: 3 }),
    items: fc.array(
      fc.record(
        { id: nonEmpty, encrypted_content: fc.base64String(), summary: fc.array(fc.string(), { maxLength: 3 }) },
        { noNullPrototype: true, requiredKeys: ['id'] },
      ),
      { maxLength: 2 },
    ),
  },
  { noNullPrototype: true, requiredKeys: [] },
);

const toolSpec: fc.Arbitrary<ToolSpec> = fc.record(
  {
    name: fc.string({ minLength: 1, maxLength: 128 }),
    description: fc.string(),
    parameters: jsonObject,
    annotations: fc.record(
      { read_only: fc.boolean(), destructive: fc.boolean(), idempotent: fc.boolean(), open_world: fc.boolean() },
      { noNullPrototype: true, requiredKeys: [] },
    ),
  },
  { noNullPrototype: true, requiredKeys: ['name', 'description', 'parameters'] },
);

const source = fc.constantFrom('user', 'agent', 'environment', 'system', 'hook' as const);
const status = fc.constantFrom(
  'idle',
  'running',
  'paused',
  'waiting_for_confirmation',
  'finished',
  'error',
  'stuck' as const,
);

/** A path relative to a workspace root, as workspace_context names files. */
const workspacePath = fc
  .array(fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,11}$/), { minLength: 1, maxLength: 3 })
  .map((parts) => parts.join('/'));

const payloads: { [T in EventType]: fc.Arbitrary<Payload<T>> } = {
  system_prompt: fc.record(
    { static_prompt: fc.string(), dynamic_prompt: fc.string(), tools: fc.array(toolSpec, { maxLength: 3 }) },
    { noNullPrototype: true, requiredKeys: ['static_prompt', 'tools'] },
  ),
  message: fc.record(
    {
      role: fc.constantFrom('user', 'assistant' as const),
      content,
      reasoning,
      response_id: nonEmpty,
      activated_skills: fc.array(fc.string(), { maxLength: 3 }),
      extended_content: content,
    },
    { noNullPrototype: true, requiredKeys: ['role', 'content'] },
  ),
  action: fc.record(
    {
      tool_call_id: nonEmpty,
      tool_name: nonEmpty,
      arguments: fc.string(),
      input: fc.option(jsonObject, { nil: null }),
      thought: content,
      reasoning,
      response_id: nonEmpty,
      security_risk: fc.constantFrom('unknown', 'low', 'medium', 'high' as const),
      summary: fc.string(),
    },
    {
      noNullPrototype: true,
      requiredKeys: ['tool_call_id', 'tool_name', 'arguments', 'input', 'thought', 'response_id', 'security_risk'],
    },
  ),
  observation: fc.record(
    {
      action_id: eventId,
      tool_call_id: nonEmpty,
      tool_name: nonEmpty,
      content,
      is_error: fc.boolean(),
      details: jsonObject,
    },
    { noNullPrototype: true, requiredKeys: ['action_id', 'tool_call_id', 'tool_name', 'content', 'is_error'] },
  ),
  agent_error: fc.oneof(
    fc.record({ error: nonEmpty }, { noNullPrototype: true }),
    fc.record(
      { tool_call_id: nonEmpty, tool_name: nonEmpty, action_id: eventId, error: nonEmpty },
      { noNullPrototype: true, requiredKeys: ['tool_call_id', 'tool_name', 'error'] },
    ),
  ),
  user_rejection: fc.record(
    {
      action_id: eventId,
      tool_call_id: nonEmpty,
      tool_name: nonEmpty,
      reason: fc.string(),
      rejection_source: fc.constantFrom('user', 'hook' as const),
    },
    { noNullPrototype: true },
  ),
  approval: fc.record({ action_ids: fc.array(eventId, { minLength: 1, maxLength: 4 }) }, { noNullPrototype: true }),
  execution_started: fc.record(
    { action_ids: fc.array(eventId, { minLength: 1, maxLength: 4 }), runner: nonEmpty },
    { noNullPrototype: true },
  ),
  condensation: fc.oneof(
    fc.record(
      { forgotten_event_ids: fc.array(eventId, { maxLength: 5 }), response_id: nonEmpty },
      { noNullPrototype: true, requiredKeys: ['forgotten_event_ids'] },
    ),
    fc.record(
      {
        forgotten_event_ids: fc.array(eventId, { maxLength: 5 }),
        summary: fc.string(),
        summary_offset: count,
        response_id: nonEmpty,
      },
      { noNullPrototype: true, requiredKeys: ['forgotten_event_ids', 'summary', 'summary_offset'] },
    ),
  ),
  condensation_request: fc.record({ reason: fc.string() }, { noNullPrototype: true, requiredKeys: [] }),
  state_change: fc
    .record(
      {
        status,
        title: fc.string({ maxLength: 200 }),
        tags: fc.array(fc.string({ minLength: 1, maxLength: 64 }), { maxLength: 32 }),
        settings_ref: fc.string({ minLength: 1, maxLength: 256 }),
        reason: fc.string(),
      },
      { noNullPrototype: true, requiredKeys: [] },
    )
    .filter((change) => ['status', 'title', 'tags', 'settings_ref'].some((key) => key in change)),
  conversation_error: fc.record({ code: nonEmpty, detail: fc.string() }, { noNullPrototype: true }),
  pause: fc.record({ reason: fc.string() }, { noNullPrototype: true, requiredKeys: [] }),
  interrupt: fc.record({ reason: fc.string() }, { noNullPrototype: true, requiredKeys: [] }),
  hook_execution: fc.record(
    {
      hook: fc.constantFrom(
        'pre_tool_use',
        'post_tool_use',
        'user_prompt_submit',
        'session_start',
        'session_end',
        'stop' as const,
      ),
      command: fc.string(),
      exit_code: fc.option(fc.integer({ min: -255, max: 255 }), { nil: null }),
      decision: fc.constantFrom('allow', 'deny', 'none' as const),
      output: fc.string(),
      action_id: eventId,
    },
    { noNullPrototype: true, requiredKeys: ['hook', 'command', 'exit_code', 'decision'] },
  ),
  llm_usage: fc.record(
    {
      model: nonEmpty,
      purpose: fc.constantFrom('step', 'condensation', 'other' as const),
      response_id: nonEmpty,
      prompt_tokens: count,
      completion_tokens: count,
      cache_read_tokens: count,
      cache_write_tokens: count,
      reasoning_tokens: count,
      latency_ms: fc.double({ min: 0, max: 600_000, noNaN: true, noDefaultInfinity: true }).map((value) => value + 0),
      cost_usd: fc.double({ min: 0, max: 1_000, noNaN: true, noDefaultInfinity: true }).map((value) => value + 0),
      fallback: fc.record(
        {
          index: fc.nat({ max: 7 }),
          provider: fc.constantFrom('openai-chat', 'openai-responses', 'anthropic'),
          model: nonEmpty,
          profile: fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,20}$/),
        },
        { noNullPrototype: true, requiredKeys: ['index', 'provider', 'model'] },
      ),
    },
    {
      noNullPrototype: true,
      requiredKeys: [
        'model',
        'purpose',
        'prompt_tokens',
        'completion_tokens',
        'cache_read_tokens',
        'cache_write_tokens',
        'reasoning_tokens',
        'latency_ms',
        'cost_usd',
      ],
    },
  ),
  secret_changed: fc.record(
    { name: fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,127}$/), action: fc.constantFrom('set', 'removed' as const) },
    { noNullPrototype: true },
  ),
  agent_spec: fc.record(
    {
      spec: fc.record(
        {
          version: fc.integer({ min: 1, max: 9 }),
          tools: fc.array(fc.constantFrom('terminal', 'think', 'finish'), { maxLength: 3 }),
        },
        { noNullPrototype: true },
      ),
      reason: fc.string({ minLength: 1, maxLength: 40 }),
      template: fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,20}$/),
    },
    { noNullPrototype: true, requiredKeys: ['spec', 'reason'] },
  ),
  mcp_tools: fc.oneof(
    fc.record(
      {
        spec_seq: fc.integer({ min: 1, max: 1_000_000 }),
        server: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/),
        tools: fc.array(toolSpec, { maxLength: 3 }),
      },
      { noNullPrototype: true },
    ),
    fc.record(
      {
        spec_seq: fc.integer({ min: 1, max: 1_000_000 }),
        server: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/),
        tools: fc.constant<ToolSpec[]>([]),
        error: fc.record(
          { code: fc.string({ minLength: 1, maxLength: 20 }), message: fc.string({ minLength: 1, maxLength: 80 }) },
          { noNullPrototype: true },
        ),
      },
      { noNullPrototype: true },
    ),
  ),
  subagent_started: fc.record(
    {
      action_id: eventId,
      tool_call_id: nonEmpty,
      agent: fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,20}$/),
      child: subjectToken,
    },
    { noNullPrototype: true },
  ),
  branch: fc.record(
    {
      kind: fc.constantFrom('fork' as const, 'rewind' as const),
      from: fc.record(
        { conversation: subjectToken, seq: fc.integer({ min: 1, max: 1_000_000 }) },
        { noNullPrototype: true },
      ),
      forgotten_event_ids: fc.array(eventId, { maxLength: 3 }),
      copied: fc.nat({ max: 50 }),
      reason: fc.string({ maxLength: 40 }),
    },
    { noNullPrototype: true, requiredKeys: ['kind', 'from', 'forgotten_event_ids', 'copied'] },
  ),
  workspace_file: fc.record(
    {
      path: workspacePath,
      action: fc.constantFrom('created' as const, 'replaced' as const),
      size: fc.nat(),
      sha256: fc.stringMatching(/^[0-9a-f]{64}$/),
    },
    { noNullPrototype: true },
  ),
  subagent_task: fc.record(
    {
      parent_call: fc.record(
        { conversation: subjectToken, action_id: eventId, tool_call_id: nonEmpty },
        { noNullPrototype: true },
      ),
      agent: fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,20}$/),
      depth: fc.integer({ min: 1, max: 64 }),
      workspace: subjectToken,
    },
    { noNullPrototype: true },
  ),
  workspace_context: fc.record(
    {
      repository: fc.array(
        fc.record(
          { path: workspacePath, content: fc.string({ maxLength: 40 }), truncated: fc.boolean() },
          { noNullPrototype: true },
        ),
        { maxLength: 2 },
      ),
      knowledge: fc.array(
        fc.record(
          {
            path: workspacePath,
            content: fc.string({ maxLength: 40 }),
            truncated: fc.boolean(),
            name: fc.string({ minLength: 1, maxLength: 20 }),
            triggers: fc.array(fc.string({ minLength: 1, maxLength: 10 }), { minLength: 1, maxLength: 3 }),
          },
          { noNullPrototype: true },
        ),
        { maxLength: 2 },
      ),
      skills: fc.array(
        fc.record(
          {
            name: fc.string({ minLength: 1, maxLength: 20 }),
            description: fc.string({ maxLength: 40 }),
            path: workspacePath,
          },
          { noNullPrototype: true },
        ),
        { maxLength: 2 },
      ),
      rules: fc.array(
        fc.record(
          {
            path: workspacePath,
            content: fc.string({ maxLength: 40 }),
            truncated: fc.boolean(),
            folder: workspacePath,
          },
          { noNullPrototype: true },
        ),
        { maxLength: 2 },
      ),
      notes: fc.array(fc.string({ minLength: 1, maxLength: 40 }), { maxLength: 2 }),
    },
    { noNullPrototype: true },
  ),
};

/** Every version an event of this type may carry: from the one that introduced it to the newest. */
const versionsOf = (type: EventType) => fc.constantFrom(...versionsSince(protocolVersionOf(type)));

const envelope = fc.record(
  {
    id: eventId,
    seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    tenant: subjectToken,
    conversation: subjectToken,
    source,
    timestamp,
    parent: eventId,
  },
  { noNullPrototype: true, requiredKeys: ['id', 'seq', 'tenant', 'conversation', 'source', 'timestamp'] },
);

/** A random valid event of one type. */
export function eventOfType<T extends EventType>(type: T): fc.Arbitrary<EventOfType<T>> {
  const payload = payloads[type] as fc.Arbitrary<Payload<T>>;
  // a field a later version added (an llm_usage's fallback) raises the event's version to that one's
  return fc
    .tuple(versionsOf(type), envelope, payload)
    .map(
      ([v, head, body]) =>
        ({ v: Math.max(v, protocolVersionOf({ type, ...body })), ...head, type, ...body }) as unknown as EventOfType<T>,
    );
}

/** A random valid event of any type. */
export function anyEvent(types: readonly EventType[]): fc.Arbitrary<Event> {
  return fc.oneof(...types.map((type) => eventOfType(type) as fc.Arbitrary<Event>));
}
