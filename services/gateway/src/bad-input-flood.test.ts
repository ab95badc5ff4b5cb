// A flood of requests to a rate-limited gateway of its own. (The other bad input:
// bad-input-bodies.test.ts, bad-input-paths-and-frames.test.ts.)
import { API_KEY_HEADER, ErrorBody } from '@flotilla/api';
import { describe, expect, it } from 'vitest';
import { ACME_KEY, GLOBEX_KEY, startGatewayHarness } from './test-support/gateway-harness.js';

describe('a request flood', () => {
  it('is answered with 429 rate_limited and Retry-After, never a 5xx, and the gateway still answers', async () => {
    await using flood = await startGatewayHarness({ rateLimitPerSecond: 20 });
    const { conversation: target } = await flood.acme.createConversation({ title: 'flood' });
    const urls = [
      '/v1/server-info',
      '/v1/conversations?limit=5',
      `/v1/conversations/${target.id}`,
      `/v1/conversations/${target.id}/events?limit=5`,
    ];
    const replies = await Promise.all(
      Array.from({ length: 300 }, async (_, index) => {
        const response = await fetch(`${flood.url}${urls[index % urls.length]!}`, {
          headers: { [API_KEY_HEADER]: ACME_KEY },
        });
        return {
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          body: (await response.json()) as unknown,
        };
      }),
    );
    const statuses = new Map<number, number>();
    for (const reply of replies) statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
    const limited = replies.filter((reply) => reply.status === 429);
    expect(limited.length, JSON.stringify([...statuses])).toBeGreaterThan(0);
    expect(replies.filter((reply) => reply.status === 200).length).toBeGreaterThan(0);
    expect(
      replies.filter((reply) => reply.status >= 500),
      JSON.stringify([...statuses]),
    ).toEqual([]);
    expect([...statuses.keys()].sort()).toEqual([200, 429]);
    for (const reply of limited) {
      expect(ErrorBody.parse(reply.body).error.code).toBe('rate_limited');
      expect(reply.retryAfter).toMatch(/^[1-9]\d*$/);
    }
    // the gateway still answers: health, another tenant at once, and acme after Retry-After
    expect((await fetch(`${flood.url}/health`)).status).toBe(200);
    expect((await fetch(`${flood.url}/v1/server-info`, { headers: { [API_KEY_HEADER]: GLOBEX_KEY } })).status).toBe(
      200,
    );
    await new Promise((resolve) => setTimeout(resolve, Number(limited[0]!.retryAfter) * 1_000));
    expect((await fetch(`${flood.url}/v1/server-info`, { headers: { [API_KEY_HEADER]: ACME_KEY } })).status).toBe(200);
  });
});
