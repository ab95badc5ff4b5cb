// A followed run's progress as MCP `notifications/progress`, sent only when the caller asked for
// them (a progressToken in the request's _meta): the model's text as it streams, and a line per event.
import type { Event } from '@flotilla/events';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FollowOptions } from './agent-runs.js';

/** What a tool handler gets from the SDK besides its arguments. */
export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export type RunProgress = {
  /** The follow options that report it (none without a progressToken). */
  readonly follow: Pick<FollowOptions, 'onDelta' | 'onEvent'>;
  /** Resolves once every notification so far is sent: the tool's result must come after them. */
  readonly flushed: () => Promise<void>;
};

const MAX_LINE_CHARS = 200;

export function runProgress(extra: ToolExtra): RunProgress {
  const token = extra._meta?.progressToken;
  if (token === undefined) return { follow: {}, flushed: () => Promise.resolve() };
  let progress = 0;
  // chained, so they arrive in order; one the client can no longer take is dropped
  let sent = Promise.resolve();
  const send = (message: string): void => {
    progress += 1;
    const notification = {
      method: 'notifications/progress' as const,
      params: { progressToken: token, progress, message },
    };
    sent = sent.then(() => extra.sendNotification(notification)).catch(() => undefined);
  };
  return {
    follow: { onDelta: send, onEvent: (event) => send(describeEvent(event)) },
    flushed: () => sent,
  };
}

/** One line for a progress message: the event's seq, type and what it is about. */
export function describeEvent(event: Event): string {
  const detail = detailOf(event);
  const line = `#${event.seq} ${event.type}${detail ? `: ${detail}` : ''}`;
  return line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS - 1)}…` : line;
}

function detailOf(event: Event): string {
  switch (event.type) {
    case 'message':
      return `${event.role}: ${textOf(event.content)}`;
    case 'action':
      return event.summary ? `${event.tool_name} (${event.summary})` : event.tool_name;
    case 'observation':
      return `${event.tool_name}${event.is_error ? ' failed' : ''}`;
    case 'state_change':
      return event.status ?? (event.title !== undefined ? `title "${event.title}"` : '');
    case 'agent_error':
      return event.error;
    default:
      return '';
  }
}

function textOf(content: readonly { type: string; text?: string }[]): string {
  return content
    .map((part) => (part.type === 'text' ? (part.text ?? '') : `[${part.type}]`))
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
}
