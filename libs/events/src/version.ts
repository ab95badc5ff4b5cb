/**
 * The newest protocol version this build writes. A writer stamps each event and commit with the
 * OLDEST version that can express it (`protocolVersionOf`), so a log holds newer versions only
 * where it must: a build that reads only v1 keeps reading every conversation that never used a
 * v2 event type, and fails loudly (never misreads) on the others.
 */
export const CURRENT_PROTOCOL_VERSION = 4 as const;

/** Versions this build can read. Events of any other version fail loudly. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly number[] = [1, 2, 3, 4];

export type ProtocolVersion = 1 | 2 | 3 | 4;

/**
 * The version that introduced each event type that is not in v1. v2 = v1 + `secret_changed`;
 * v3 = v2 + `agent_spec`, `mcp_tools` and `workspace_context`. Every event of a version is also a valid event of each
 * later one (with any `v` from its type's first version on); a type introduced later needs at
 * least its version.
 */
const INTRODUCED_IN: Readonly<Record<string, ProtocolVersion>> = { secret_changed: 2, agent_spec: 3, mcp_tools: 3, workspace_context: 3 };

/** The event types introduced after v1, each with its version, in version order. */
export function laterEventTypes(): readonly (readonly [string, ProtocolVersion])[] {
  return Object.entries(INTRODUCED_IN).sort(([, a], [, b]) => a - b);
}

/** The versions an event of a type introduced in `introduced` may carry: from that one to the newest. */
export function versionsSince(introduced: ProtocolVersion): ProtocolVersion[] {
  return (SUPPORTED_PROTOCOL_VERSIONS as ProtocolVersion[]).filter((version) => version >= introduced);
}

/** The oldest protocol version that has this event type: the `v` a writer gives its events. */
export function protocolVersionOf(type: string): ProtocolVersion {
  return INTRODUCED_IN[type] ?? 1;
}

/** The version of a commit holding these events: the newest of theirs (1 for none). */
export function commitVersionOf(events: readonly { readonly v: number }[]): ProtocolVersion {
  let version: ProtocolVersion = 1;
  for (const event of events) if (event.v > version) version = event.v as ProtocolVersion;
  return version;
}
