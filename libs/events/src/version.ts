/** The protocol version every event and commit carries in its `v` field. */
export const CURRENT_PROTOCOL_VERSION = 1 as const;

/** Versions this build can read. Events of any other version fail loudly. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly number[] = [1];

export type ProtocolVersion = typeof CURRENT_PROTOCOL_VERSION;
