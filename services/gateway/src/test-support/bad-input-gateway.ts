// The gateway the bad-input-*.test.ts files throw bad input at (small body and frame limits, no
// rate limit), a conversation of it, and requests to it.
import { afterAll, beforeAll } from 'vitest';
import { ACME_KEY, startGatewayHarness, type GatewayHarness } from './gateway-harness.js';
import { PROBE_CONFIG, seedConversation, send, sendJson, type Method, type Reply } from './http-probe.js';

export let h: GatewayHarness;
/** An acme conversation with a handful of events (cursors need more than one page). */
export let conversation: string;
export let eventIds: string[] = [];

/** Before the file's tests: the gateway (`h`) and its conversation (`conversation`, `eventIds`); after them, gone. */
export function startBadInputGateway(): void {
  beforeAll(async () => {
    h = await startGatewayHarness(PROBE_CONFIG);
    ({ conversation, eventIds } = await seedConversation(h, 'bad input'));
  });
  afterAll(async () => {
    await h?.[Symbol.asyncDispose]();
  });
}

export const json = (method: Method, url: string, body: unknown, key: string = ACME_KEY): Promise<Reply> =>
  sendJson(h, method, url, body, key);
export const get = (url: string, key: string = ACME_KEY): Promise<Reply> => send(h, { method: 'GET', url, key });
