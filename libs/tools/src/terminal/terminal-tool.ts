import { z } from 'zod';
import type { ToolContext } from '../core/context.js';
import { describeError } from '../core/errors.js';
import { OUTPUT_BOUNDS } from '../core/output-bounds.js';
import type { ToolResult } from '../core/result.js';
import { errorResult } from '../core/result.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import { defineTool } from '../core/tool-definition.js';
import type { BashSession } from './bash-session.js';
import { BashSession as Session } from './bash-session.js';
import { interpretInput, NAMED_KEY_NAMES } from './keys.js';
import { terminalObservation } from './terminal-observation.js';
import { TerminalSessions } from './terminal-sessions.js';
import { isOverQuota } from './workspace-quota.js';
import type { WaitOutcome } from './wait-for-command.js';
import { interruptCommand, waitForCommand } from './wait-for-command.js';

/** Seconds without new output after which a command is reported as still running (OpenHands' NO_CHANGE_TIMEOUT_SECONDS). */
export const NO_CHANGE_TIMEOUT_SECONDS = 30;

export type TerminalToolOptions = {
  readonly softTimeoutSeconds?: number;
  /** Longest one call waits while output keeps flowing (default 600 s). */
  readonly maxWaitSeconds?: number;
  /** How long C-c gets before the shell is killed after a hard timeout (default 3 s). */
  readonly interruptGraceSeconds?: number;
  /** Extra environment variables of every shell (the sandbox builds the rest from scratch). */
  readonly env?: Readonly<Record<string, string>>;
  readonly outputLimit?: number;
  /** Bytes of one command's output kept in memory (head and tail) before the middle is dropped. */
  readonly bufferCapacity?: number;
};

export const TerminalParameters = z.object({
  command: z
    .string()
    .default('')
    .describe(
      'The bash command to run. Empty to get more output from a command that is still running. With is_input=true, the text or key to send to it.',
    ),
  is_input: z
    .boolean()
    .default(false)
    .describe(
      `Send \`command\` to the running process instead of starting a new command: raw text (followed by Enter) or a named key: ${NAMED_KEY_NAMES.join(', ')}.`,
    ),
  timeout: z
    .number()
    .positive()
    .optional()
    .describe(
      'Hard timeout in seconds: the command is interrupted when it runs longer. Without it, the call returns when the command prints nothing new for a while, and the command keeps running.',
    ),
  reset: z
    .boolean()
    .default(false)
    .describe('Kill the shell and start a fresh one (cwd and environment are lost), then run `command` if given.'),
});
export type TerminalParameters = z.infer<typeof TerminalParameters>;

export type TerminalTool = ToolDefinition<TerminalParameters> & {
  /** Kill the shell of one conversation. */
  closeConversation(conversationId: string): Promise<void>;
};

const DESCRIPTION = `Run commands in a persistent bash shell. The working directory and environment variables persist between calls.
* One command at a time; chain with && or ;. Run long-lived servers in the background: \`cmd > log.txt 2>&1 &\`.
* When a command prints nothing new for a while the call returns its output so far and the command keeps running: send an empty command to wait for more, is_input=true to type into it, or C-c to interrupt it.
* Long outputs are clipped; the text is saved to a file whose path is given (of a very long output, its first and last parts), to be read in pieces.
* There is no TTY: pass flags for non-interactive use (e.g. \`apt-get -y\`, \`git --no-pager\`).`;

export function createTerminalTool(options: TerminalToolOptions = {}): TerminalTool {
  const softTimeoutSeconds = options.softTimeoutSeconds ?? NO_CHANGE_TIMEOUT_SECONDS;
  const maxWaitMs = (options.maxWaitSeconds ?? 600) * 1_000;
  const graceMs = (options.interruptGraceSeconds ?? 3) * 1_000;
  const outputLimit = (options.outputLimit ?? OUTPUT_BOUNDS.outputChars) - 1_000;
  const sessions = new TerminalSessions((sandbox, cwd) =>
    Session.start({
      sandbox,
      cwd,
      ...(options.env ? { env: options.env } : {}),
      bufferCapacity: options.bufferCapacity ?? OUTPUT_BOUNDS.terminalBufferBytes,
    }),
  );

  async function observe(
    session: BashSession,
    context: ToolContext,
    hardTimeoutSeconds: number | undefined,
    notes: string[],
  ): Promise<ToolResult> {
    const hardTimeoutMs = hardTimeoutSeconds === undefined ? undefined : hardTimeoutSeconds * 1_000;
    const quota = context.workspaceQuotaBytes;
    const killsBefore = context.sandbox.outOfMemoryKills?.();
    const outcome: WaitOutcome = await waitForCommand(session, {
      ...(hardTimeoutMs === undefined ? { softTimeoutMs: softTimeoutSeconds * 1_000 } : { hardTimeoutMs }),
      maxWaitMs: Math.max(maxWaitMs, hardTimeoutMs ?? 0),
      signal: context.signal,
      ...(quota === undefined ? {} : { overQuota: () => isOverQuota(context.workspace.root, quota) }),
    });
    let killed = false;
    if (outcome === 'hard_timeout' || outcome === 'cancelled' || outcome === 'over_quota') {
      killed = (await interruptCommand(session, graceMs)).killed;
    }
    const collected = await session.collect();
    const outOfMemoryKills =
      killsBefore === undefined ? 0 : (context.sandbox.outOfMemoryKills?.() ?? killsBefore) - killsBefore;
    return terminalObservation({
      collected,
      outcome,
      softTimeoutSeconds,
      hardTimeoutSeconds,
      ...(quota === undefined ? {} : { quotaBytes: quota }),
      killed,
      outOfMemoryKills,
      notes,
      outputDir: context.outputDir,
      outputLimit,
      ...(context.redact ? { redact: context.redact } : {}),
    });
  }

  async function sendInput(
    session: BashSession,
    input: string,
    context: ToolContext,
    notes: string[],
  ): Promise<ToolResult> {
    const action = interpretInput(input);
    if (action.kind === 'unsupported') return errorResult(action.reason);
    if (action.kind === 'signal') session.signal(action.signal);
    else if (action.kind === 'eof') await session.closeInput();
    else await session.write(action.text);
    return observe(session, context, undefined, notes);
  }

  async function run(params: TerminalParameters, context: ToolContext): Promise<ToolResult> {
    const root = context.sandbox.workspacePath;
    const notes: string[] = [];
    let session: BashSession;
    if (params.reset) {
      session = await sessions.reset(context.conversationId, context.sandbox, root);
      notes.push(`[The terminal was reset: a fresh shell started in ${root}.]`);
      if (params.command.trim() === '')
        return {
          content: [{ type: 'text', text: notes.join('\n') }],
          isError: false,
          details: { cwd: root, exit_code: null, still_running: false },
        };
    } else {
      const acquired = await sessions.acquire(context.conversationId, context.sandbox, root);
      session = acquired.session;
      if (acquired.restarted !== undefined)
        notes.push(`[The previous shell had exited; a new shell started in ${session.cwd}.]`);
    }
    const running = session.state === 'running';
    if (params.is_input) {
      if (!running)
        return errorResult(
          'No command is running, so there is nothing to send input to. Run a command with is_input=false.',
        );
      return sendInput(session, params.command, context, notes);
    }
    if (params.command.trim() === '') {
      if (!running)
        return errorResult('No command is running, so there is no more output to get. Provide a command to run.');
      return observe(session, context, params.timeout, notes);
    }
    if (running) {
      const result = await observe(session, context, undefined, [
        '[A previous command is still running, so the new command was NOT run. Wait for it with an empty command, send input with is_input=true, or interrupt it with is_input=true and command "C-c". Its latest output follows.]',
      ]);
      return { ...result, isError: true };
    }
    await session.run(params.command);
    return observe(session, context, params.timeout, notes);
  }

  const closeConversation = (conversationId: string): Promise<void> => sessions.close(conversationId);
  const tool = defineTool({
    name: 'terminal',
    description: DESCRIPTION,
    parameters: TerminalParameters,
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: true },
    resources: (_params, context) => [`terminal:${context.conversationId}`],
    async execute(params, context) {
      if (context.signal.aborted) return errorResult('The run was cancelled before the command started.');
      try {
        return await sessions.exclusive(context.conversationId, () => run(params, context));
      } catch (error) {
        context.logger.warn({ err: error }, 'terminal failure');
        return errorResult(`The terminal failed: ${describeError(error)}. Try again with reset=true.`);
      }
    },
    close: () => sessions.closeAll(),
    closeConversation,
  });
  return { ...tool, closeConversation };
}
