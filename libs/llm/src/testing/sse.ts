/** Wire protocols the test server can speak. */
export type WireProtocol = 'openai-chat' | 'openai-responses' | 'anthropic';

/** One SSE message: an optional `event:` name and a JSON payload (or a raw data string). */
export type SseEvent = { readonly event?: string; readonly data: unknown };

export function frameSse(event: SseEvent): string {
  const data = typeof event.data === 'string' ? event.data : JSON.stringify(event.data);
  const name = event.event === undefined ? '' : `event: ${event.event}\n`;
  return `${name}${data
    .split('\n')
    .map((line) => `data: ${line}`)
    .join('\n')}\n\n`;
}

/**
 * Frames recorded payloads the way each provider does: Chat Completions sends bare `data:` lines and
 * a final `data: [DONE]`; Responses and Anthropic name every event after its `type`.
 */
export function protocolEvents(protocol: WireProtocol, payloads: readonly unknown[]): SseEvent[] {
  if (protocol === 'openai-chat') return [...payloads.map((data) => ({ data })), { data: '[DONE]' }];
  return payloads.map((data) => ({ event: (data as { type: string }).type, data }));
}
