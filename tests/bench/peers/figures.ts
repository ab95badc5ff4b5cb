/** What a peer's process measures and hands back to the benchmark (one JSON line on its stdout). */
export type PeerFigures = {
  readonly peer: string;
  /** One conversation, zero-latency model: time between consecutive tool runs, after the warm-up. */
  readonly cycle: { readonly p50: number; readonly p90: number; readonly n: number };
  readonly load: {
    readonly conversations: number;
    readonly latencyMs: number;
    readonly windowMs: number;
    /** Steps (tool runs, each after its decision was durable) that started in the window. */
    readonly steps: number;
    /** conversations × window / (latency + cycle p50) */
    readonly idealSteps: number;
    /** CPU in the window by process (label → CPU seconds), every process of the peer. */
    readonly cpuSeconds: Readonly<Record<string, number>>;
    /** Processes counted under each label, and those seen before the window and gone after it (their CPU is not counted). */
    readonly processes: Readonly<Record<string, { readonly counted: number; readonly gone: number }>>;
  };
  /** What the peer wrote per step, measured: of the cycle's conversation, and under load (one line each). */
  readonly writes: { readonly conversation: readonly string[]; readonly load: readonly string[] };
};

/** The prefix of the line that carries a peer's figures. */
export const FIGURES_LINE = 'PEER_FIGURES ';

/** The benchmark's settings for a peer's process (in its environment, as JSON). */
export type PeerOptions = {
  readonly cycles: number;
  readonly warmupCycles: number;
  readonly conversations: number;
  readonly latencyMs: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  /** The database of the peer's own (DBOS, LangGraph), on the machine's PostgreSQL. */
  readonly databaseUrl?: string;
  /** Where the peer keeps files of its own (Restate's data directory). */
  readonly scratchDir: string;
};

export const OPTIONS_VARIABLE = 'PEER_OPTIONS';
