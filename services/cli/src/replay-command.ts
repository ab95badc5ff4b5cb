import type { Event } from '@flotilla/events';
import type { CliClient } from './cli-client.js';
import { usageError } from './errors.js';
import type { SecretInput } from './secret-commands.js';
import { readInputFile } from './spec-commands.js';
import type { Terminal } from './terminal.js';

const PAGE = 200;

export type ReplayContext = { readonly out: Terminal; readonly err: Terminal; readonly input?: SecretInput };

/**
 * `replay ID [--check FILE]`: every step's model request rebuilt from the conversation's log alone
 * (read page by page through the gateway), one JSON line each (`seq`, `spec_seq`, `provider`,
 * `model`, `body`: the body byte for byte as a JSON string); with `--check`, compared with the
 * requests recorded in FILE instead. True when there was nothing to report (every step the same).
 */
export async function replayConversation(
  client: CliClient,
  id: string,
  check: string | undefined,
  context: ReplayContext,
): Promise<boolean> {
  const recorded =
    check === undefined ? undefined : recordedRequests(await readInputFile(check, '--check', context), check);
  const events: Event[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.searchEvents(id, {
      limit: PAGE,
      ...(cursor === undefined ? { after_seq: 0 } : { cursor }),
    });
    events.push(...page.items);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  // loaded only here: the agent's libraries are not needed by the CLI's other commands
  const { checkRequests, replayRequests } = await import('@flotilla/agent');
  const replayed = replayRequests(events);
  if (recorded === undefined) {
    for (const request of replayed)
      context.out.line(
        JSON.stringify({
          seq: request.seq,
          spec_seq: request.specSeq,
          provider: request.provider,
          model: request.model,
          body: request.body,
        }),
      );
    if (replayed.length === 0) context.err.line(`no steps in ${id}: its log has no model call of a step`);
    return true;
  }
  const checks = checkRequests(replayed, recorded);
  for (const result of checks) {
    if (result.result === 'same') context.out.line(`seq ${result.seq}: same, byte for byte`);
    else if (result.result === 'missing') context.out.line(`seq ${result.seq}: no recorded request for this step`);
    else context.out.line(`seq ${result.seq}: differs from byte ${result.byte}: ${result.detail}`);
  }
  const same = checks.filter((result) => result.result === 'same').length;
  context.err.line(
    `${same} of ${checks.length} steps rebuilt byte for byte${recorded.length > checks.length ? ` (${recorded.length - checks.length} recorded requests are no step of the log)` : ''}`,
  );
  return same === checks.length;
}

/** FILE's requests: JSON lines, each an object with the request's `body` (a string) and, optionally, the step's `seq`. */
export function recordedRequests(text: string, path: string): { seq?: number; body: string }[] {
  return text
    .split('\n')
    .map((line, index) => ({ line, number: index + 1 }))
    .filter(({ line }) => line.trim() !== '')
    .map(({ line, number }) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw usageError(`--check ${path}:${number}: not a JSON line`);
      }
      const entry = parsed as { seq?: unknown; body?: unknown } | null;
      if (typeof entry !== 'object' || entry === null || typeof entry.body !== 'string')
        throw usageError(`--check ${path}:${number}: each line is an object with the request's "body" as a string`);
      if (
        entry.seq !== undefined &&
        (typeof entry.seq !== 'number' || !Number.isSafeInteger(entry.seq) || entry.seq < 1)
      )
        throw usageError(`--check ${path}:${number}: "seq" must be a positive whole number`);
      return { ...(entry.seq === undefined ? {} : { seq: entry.seq as number }), body: entry.body };
    });
}
