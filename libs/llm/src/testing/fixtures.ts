import { readFileSync } from 'node:fs';
import { protocolEvents, type WireProtocol } from './sse.js';
import type { HttpReply, RecordedRequest, ReplyScript } from './test-server.js';

/** A recorded provider turn: the non-streamed JSON body and the payloads of the same turn streamed. */
export type ProviderFixture = {
  readonly protocol: WireProtocol;
  readonly description: string;
  readonly response: unknown;
  readonly stream: readonly unknown[];
};

export const FIXTURE_NAMES = [
  'openai-chat-tool-call',
  'openai-chat-prompt-tools',
  'openai-responses-tool-call',
  'anthropic-tool-call',
] as const;
export type FixtureName = (typeof FIXTURE_NAMES)[number];

export function loadFixture(name: FixtureName): ProviderFixture {
  return readJson(`${name}.json`) as ProviderFixture;
}

/** Recorded error bodies by provider family and kind (see fixtures/errors.json). */
export function loadErrorBody(family: 'openai' | 'anthropic' | 'vllm' | 'llama_cpp', kind: string): unknown {
  const errors = readJson('errors.json') as Record<string, Record<string, unknown>>;
  const body = errors[family]?.[kind];
  if (body === undefined) throw new Error(`No recorded ${family} error named ${kind}`);
  return body;
}

/** Replays a fixture as JSON or as an SSE stream, following the `stream` flag the SDK sent. */
export function fixtureReply(fixture: ProviderFixture, options: { readonly delayMs?: number } = {}): ReplyScript {
  return (request: RecordedRequest): HttpReply =>
    isStreaming(request)
      ? {
          type: 'sse',
          events: protocolEvents(fixture.protocol, fixture.stream),
          ...(options.delayMs ? { delayMs: options.delayMs } : {}),
        }
      : { type: 'json', body: fixture.response };
}

/** An error reply with a recorded body, e.g. 429 with `retry-after`. */
export function errorReply(status: number, body: unknown, headers: Record<string, string> = {}): HttpReply {
  return { type: 'json', status, body, headers };
}

function isStreaming(request: RecordedRequest): boolean {
  return (
    typeof request.body === 'object' && request.body !== null && (request.body as { stream?: unknown }).stream === true
  );
}

function readJson(file: string): unknown {
  return JSON.parse(readFileSync(new URL(`./fixtures/${file}`, import.meta.url), 'utf8'));
}
