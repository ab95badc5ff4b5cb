/**
 * The task a test conversation carries in its first user message: `TASK {"id":…,"steps":…}`.
 * The brain is a pure function of the request's messages, so a retried or duplicated LLM call
 * (after a crash) gets the same answer.
 */
export type BrainTask = {
  readonly id: string;
  /** Tool calls before the final answer. */
  readonly steps: number;
  /** File every action appends one line `<id> <step>` to (relative: in the conversation's workspace): counts side effects. */
  readonly effects: string;
  /** Seconds each command sleeps before its side effect (to land kills mid-action). */
  readonly sleep?: number;
  /** Milliseconds of model latency per call. */
  readonly latencyMs?: number;
  /** Stream the reply in this many chunks, one every `chunkDelayMs` (for interrupt tests). */
  readonly chunks?: number;
  readonly chunkDelayMs?: number;
  /** Parallel tool calls per step (default 1). */
  readonly parallel?: number;
  /** Calls that start before this time (epoch ms) stream slowly (`chunks`, `chunkDelayMs`); later ones are quick. */
  readonly slowUntil?: number;
  /** Tool the calls use: `terminal` commands with side effects (default) or no-op `think` calls (benchmarks). */
  readonly tool?: 'terminal' | 'think';
  /** Terminal commands to run instead, one per step (`steps` must be their number). */
  readonly commands?: readonly string[];
  /** The final answer is this many characters long (past what a commit can hold, for the hostile-reply test). */
  readonly finalAnswerChars?: number;
  /** Tool calls to make instead, one per step: any tool with its input. */
  readonly calls?: readonly { readonly tool: string; readonly input: Readonly<Record<string, unknown>> }[];
  /** Parallel tool calls to make instead, one batch per step (`steps` must be their number): any tools with their inputs. */
  readonly batches?: readonly (readonly {
    readonly tool: string;
    readonly input: Readonly<Record<string, unknown>>;
  }[])[];
  /**
   * The task's first model call waits until `count` first calls of tasks with the same `group`
   * are in flight at once (at most `timeoutMs`, default 20 s); later calls pass. Shows calls that
   * run in parallel, on as many step workers when each takes one call at a time.
   */
  readonly meet?: { readonly group: string; readonly count: number; readonly timeoutMs?: number };
  /**
   * A hostile model: `invalid_tool_calls` answers every turn with a call that cannot run (an
   * unknown tool, arguments that are not JSON, arguments failing the schema, in turn);
   * `text_tool_calls` writes its calls as text (`<function=…>` markup, a JSON object, a
   * `<tool_call>` block, in turn) and makes no native call; `endless_stream` streams content that
   * never ends (until the client closes the connection).
   */
  readonly hostile?: 'invalid_tool_calls' | 'text_tool_calls' | 'endless_stream';
  /** Turns the hostile model misbehaves before it answers as an ordinary task (default: every turn). */
  readonly hostileTurns?: number;
};

/** The user message that gives a test conversation its task (read back by findTask). */
export function taskMessage(task: BrainTask): string {
  return `TASK ${JSON.stringify(task)}`;
}

/** A Chat Completions request's message, as far as the brain reads it. */
export type ChatMessage = { role: string; content?: unknown; tool_calls?: unknown[] };

/** The task the conversation's first `TASK {…}` user message carries (text or content parts). */
export function findTask(messages: readonly ChatMessage[]): BrainTask | undefined {
  for (const message of messages) {
    if (message.role !== 'user') continue;
    const text =
      typeof message.content === 'string'
        ? message.content
        : Array.isArray(message.content)
          ? message.content.map((part: { text?: string }) => part.text ?? '').join('')
          : '';
    const match = /TASK (\{.*\})/s.exec(text);
    if (match) return JSON.parse(match[1]!) as BrainTask;
  }
  return undefined;
}

/** Steps done: one past the highest step whose results came back, or what a summary recorded. */
export function progressOf(messages: readonly ChatMessage[], task: string): number {
  let done = 0;
  const callId = new RegExp(`^call_${task}_(\\d+)_`);
  for (const message of messages) {
    if (message.role === 'tool') {
      const match = callId.exec(String((message as { tool_call_id?: string }).tool_call_id ?? ''));
      if (match) done = Math.max(done, Number(match[1]) + 1);
    } else if (message.role === 'user') {
      done = Math.max(done, progressIn(JSON.stringify(message.content ?? ''), task));
    }
  }
  return done;
}

/** Progress visible anywhere in a text: PROGRESS=<n> markers and tool call ids. */
export function progressIn(text: string, task: string): number {
  let done = 0;
  for (const match of text.matchAll(/PROGRESS=(\d+)/g)) done = Math.max(done, Number(match[1]));
  for (const match of text.matchAll(new RegExp(`call_${task}_(\\d+)_`, 'g')))
    done = Math.max(done, Number(match[1]) + 1);
  return done;
}
