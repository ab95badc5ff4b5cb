import { formatBytes } from '@flotilla/sandbox';
import { boundOutput } from '../core/output-bounds.js';
import type { ToolResult } from '../core/result.js';
import type { Collected } from './bash-session.js';
import { droppedNote } from './output-buffer.js';
import { readableTerminalText } from './terminal-text.js';
import type { WaitOutcome } from './wait-for-command.js';

export type ObservationInput = {
  readonly collected: Collected;
  readonly outcome: WaitOutcome;
  readonly softTimeoutSeconds: number;
  readonly hardTimeoutSeconds?: number;
  readonly quotaBytes?: number;
  readonly killed: boolean;
  /** Processes the kernel killed in the sandbox for its memory while the command ran. */
  readonly outOfMemoryKills?: number;
  readonly notes: readonly string[];
  readonly outputDir: string;
  readonly outputLimit: number;
  readonly redact?: (text: string) => string;
};

function statusLines(input: ObservationInput): { lines: string[]; isError: boolean } {
  const { collected, outcome } = input;
  const lines: string[] = [];
  let isError = false;
  if (outcome === 'hard_timeout' || outcome === 'cancelled' || outcome === 'over_quota') {
    isError = true;
    const why =
      outcome === 'hard_timeout'
        ? `The command timed out after ${input.hardTimeoutSeconds ?? 0} seconds`
        : outcome === 'over_quota'
          ? `The workspace went over its size quota of ${formatBytes(input.quotaBytes ?? 0)}, so the command was stopped; delete files to make room`
          : 'The run was cancelled';
    lines.push(
      input.killed
        ? `[${why}; it did not stop after C-c, so the shell was killed.]`
        : `[${why} and was interrupted with C-c.]`,
    );
  }
  if ((input.outOfMemoryKills ?? 0) > 0) {
    isError = true;
    const count = input.outOfMemoryKills === 1 ? 'a process' : `${input.outOfMemoryKills} processes`;
    lines.push(
      `[The sandbox ran out of memory (its limit holds all its processes together), so the kernel killed ${count} in it. Use less memory at once: fewer processes side by side, or smaller data.]`,
    );
  }
  if (collected.shellExitCode !== undefined) {
    lines.push(
      `[The shell exited with code ${collected.shellExitCode}. A new shell will start in ${collected.cwd} on the next command; environment variables set earlier are lost.]`,
    );
  } else if (collected.completed) {
    lines.push(`[The command completed with exit code ${collected.exitCode ?? 'unknown'}.]`);
  } else if (outcome === 'soft_timeout' || outcome === 'max_wait') {
    const why =
      outcome === 'soft_timeout'
        ? `has printed nothing new for ${input.softTimeoutSeconds} seconds`
        : 'is still producing output';
    lines.push(
      `[The command ${why} and is still running (it may be waiting for input). Send an empty command to get more output, send input or keys with is_input=true (e.g. C-c to interrupt), or set a longer timeout next time.]`,
    );
  }
  lines.push(`[Current working directory: ${collected.cwd}]`);
  return { lines, isError };
}

/** The terminal's observation: bounded output, then status, exit code and cwd. */
export async function terminalObservation(input: ObservationInput): Promise<ToolResult> {
  const { collected } = input;
  // what the command printed in all: the buffer kept its head and tail and marked the gap
  const gap = collected.dropped > 0 ? droppedNote(collected.dropped).length : 0;
  const readable = readableTerminalText(collected.output, collected.output.length - gap + collected.dropped);
  const totalCharacters = readable.length - gap + collected.dropped;
  const bounded = await boundOutput(readable, {
    toolName: 'terminal',
    outputDir: input.outputDir,
    limit: input.outputLimit,
    totalCharacters,
    ...(input.redact ? { redact: input.redact } : {}),
  });
  const { lines, isError } = statusLines(input);
  const parts = [...input.notes];
  if (bounded.text !== '') parts.push(bounded.text.endsWith('\n') ? bounded.text.slice(0, -1) : bounded.text);
  parts.push(...lines);
  const stillRunning = !collected.completed;
  return {
    content: [{ type: 'text', text: parts.join('\n') }],
    isError,
    details: {
      exit_code: collected.exitCode ?? collected.shellExitCode ?? null,
      cwd: collected.cwd,
      still_running: stillRunning,
      timed_out: input.outcome === 'hard_timeout',
      ...(bounded.savedPath === undefined ? {} : { output_file: bounded.savedPath }),
    },
  };
}
