/**
 * The loop every peer runs, in one process (model and tool beside the engine): a scripted model
 * decides one tool call (after `latencyMs`, 0 for the cycle, 1 s under load), the engine makes the
 * decision durable, a no-op tool runs, the engine makes its result durable, the next model call
 * follows. The engine's code calls `model` and `tool` inside its own durable steps; the loop only
 * scripts them and times when each tool run starts (its decision is durable by then, and the
 * previous result was before the model was called).
 */
export type Decision =
  | {
      readonly kind: 'call';
      readonly callId: string;
      readonly tool: 'noop';
      readonly arguments: { readonly step: number };
    }
  | { readonly kind: 'finish' };
export type ToolResult = { readonly callId: string; readonly output: string };

export class ScriptedLoop {
  #latencyMs = 0;
  #stopping = false;
  readonly #toolRuns = new Map<string, number[]>();
  readonly #listeners: (() => void)[] = [];

  /** The model's latency for the calls that start from now on. */
  get latencyMs(): number {
    return this.#latencyMs;
  }

  set latencyMs(value: number) {
    this.#latencyMs = value;
    for (const listener of this.#listeners) listener();
  }

  /** Once set, every model call decides to finish: each conversation ends after its call in flight. */
  get stopping(): boolean {
    return this.#stopping;
  }

  set stopping(value: boolean) {
    this.#stopping = value;
    for (const listener of this.#listeners) listener();
  }

  /** Told when the latency or `stopping` changes (a peer whose model runs in another process passes them on). */
  onChange(listener: () => void): void {
    this.#listeners.push(listener);
  }

  async model(conversation: string, step: number, maxSteps: number): Promise<Decision> {
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    if (this.stopping || step >= maxSteps) return { kind: 'finish' };
    return { kind: 'call', callId: `${conversation}-${step}`, tool: 'noop', arguments: { step } };
  }

  tool(conversation: string, decision: Decision): ToolResult {
    if (decision.kind !== 'call') throw new Error(`${conversation}: the tool ran for a finish`);
    let runs = this.#toolRuns.get(conversation);
    if (!runs) this.#toolRuns.set(conversation, (runs = []));
    runs.push(performance.timeOrigin + performance.now());
    return { callId: decision.callId, output: 'ok' };
  }

  /** A tool run of the conversation at `at` (ms since the epoch), as another process running the loop's tool timed it. */
  recordToolRun(conversation: string, at: number): void {
    let runs = this.#toolRuns.get(conversation);
    if (!runs) this.#toolRuns.set(conversation, (runs = []));
    runs.push(at);
  }

  /** When each of the conversation's tool runs started (ms since the epoch, sub-ms precision), in order. */
  toolRuns(conversation: string): readonly number[] {
    return [...(this.#toolRuns.get(conversation) ?? [])].sort((a, b) => a - b);
  }

  /** Tool runs of every conversation that started in [from, to). */
  toolRunsBetween(from: number, to: number): number {
    let count = 0;
    for (const runs of this.#toolRuns.values()) for (const at of runs) if (at >= from && at < to) count += 1;
    return count;
  }
}
