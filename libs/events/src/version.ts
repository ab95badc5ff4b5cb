/**
 * The newest protocol version this build writes. A writer stamps each event and commit with the
 * OLDEST version that can express it (`protocolVersionOf`), so a log holds newer versions only
 * where it must: a build that reads only v1 keeps reading every conversation that never used a
 * v2 event type, and fails loudly (never misreads) on the others.
 */
export const CURRENT_PROTOCOL_VERSION = 5 as const;

/** Versions this build can read. Events of any other version fail loudly. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly number[] = [1, 2, 3, 4, 5];

export type ProtocolVersion = 1 | 2 | 3 | 4 | 5;

/**
 * The version that introduced each event type that is not in v1. v2 = v1 + `secret_changed`;
 * v3 = v2 + `agent_spec`, `mcp_tools` and `workspace_context`; v4 = v3 + `subagent_started` and
 * `subagent_task`, `branch`, `workspace_file` (and stored images, FIELDS_INTRODUCED below); v5 = v4 + an
 * `llm_usage`'s `fallback` (FIELDS_INTRODUCED). Every event of a version is also a valid event of each
 * later one (with any `v` from its type's first version on); a type introduced later needs at
 * least its version.
 */
const INTRODUCED_IN: Readonly<Record<string, ProtocolVersion>> = {
  secret_changed: 2,
  agent_spec: 3,
  mcp_tools: 3,
  workspace_context: 3,
  subagent_started: 4,
  subagent_task: 4,
  branch: 4,
  workspace_file: 4,
};

/** The event types introduced after v1, each with its version, in version order. */
export function laterEventTypes(): readonly (readonly [string, ProtocolVersion])[] {
  return Object.entries(INTRODUCED_IN).sort(([, a], [, b]) => a - b);
}

/** The versions an event of a type introduced in `introduced` may carry: from that one to the newest. */
export function versionsSince(introduced: ProtocolVersion): ProtocolVersion[] {
  return (SUPPORTED_PROTOCOL_VERSIONS as ProtocolVersion[]).filter((version) => version >= introduced);
}

/**
 * Fields that a later version added to an event type of an earlier one, each with that version
 * and how to tell that an event uses it. v4: a stored image (an image part with `sha256`) in any
 * of an event's content lists; v5: the fallback model that made an `llm_usage`'s call. A reader of an older version refuses the field (events are
 * strict), so an event using it carries the field's version and an older reader stops at the
 * version, saying so, instead of at an unknown field.
 */
const FIELDS_INTRODUCED: readonly {
  readonly field: string;
  readonly version: ProtocolVersion;
  uses(event: object): boolean;
}[] = [
  { field: 'a stored image (an image part with sha256)', version: 4, uses: holdsStoredImage },
  {
    field: "an llm_usage's fallback",
    version: 5,
    uses: (event) =>
      (event as { type?: unknown }).type === 'llm_usage' && (event as { fallback?: unknown }).fallback !== undefined,
  },
];

/** The event fields whose values are content parts (text and images). */
export const CONTENT_FIELDS = ['content', 'extended_content', 'thought'] as const;

function holdsStoredImage(event: object): boolean {
  for (const field of CONTENT_FIELDS) {
    const parts = (event as Record<string, unknown>)[field];
    if (!Array.isArray(parts)) continue;
    for (const part of parts)
      if (
        typeof part === 'object' &&
        part !== null &&
        (part as { type?: unknown }).type === 'image' &&
        'sha256' in part
      )
        return true;
  }
  return false;
}

/**
 * The oldest protocol version that can express an event: the `v` a writer gives it. Given a
 * type alone, the version that introduced the type; given an event (or a draft), also the
 * version of each later field it uses. The one place that decides an event's version: writers
 * stamp it (`draftEvent`) and readers refuse an event whose `v` is older (the schemas).
 */
export function protocolVersionOf(event: string | { readonly type: string }): ProtocolVersion {
  if (typeof event === 'string') return INTRODUCED_IN[event] ?? 1;
  let version = INTRODUCED_IN[event.type] ?? 1;
  for (const later of FIELDS_INTRODUCED) if (later.version > version && later.uses(event)) version = later.version;
  return version;
}

/** What makes an event need a version later than its type's (undefined when nothing does): for error messages. */
export function laterFieldOf(event: {
  readonly type: string;
}): { readonly field: string; readonly version: ProtocolVersion } | undefined {
  const type = INTRODUCED_IN[event.type] ?? 1;
  return FIELDS_INTRODUCED.filter((later) => later.version > type && later.uses(event)).sort(
    (a, b) => b.version - a.version,
  )[0];
}

/** The version of a commit holding these events: the newest of theirs (1 for none). */
export function commitVersionOf(events: readonly { readonly v: number }[]): ProtocolVersion {
  let version: ProtocolVersion = 1;
  for (const event of events) if (event.v > version) version = event.v as ProtocolVersion;
  return version;
}
