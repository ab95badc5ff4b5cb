import type { FlotillaApiError } from '@flotilla/client';
import { describe, expect, it } from 'vitest';
import { startGatewayHarness } from './test-support/gateway-harness.js';

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as FlotillaApiError,
  );

describe('run admission', () => {
  it('answers 429 capacity_exhausted with Retry-After when the running limit is reached, per tenant and overall', async () => {
    // nothing steps in the harness: a started run stays running and holds its slot
    await using h = await startGatewayHarness({ maxRunning: 3, maxRunningPerTenant: 2 });
    await h.acme.createConversation({ id: 'a1', message: 'go', run: true });
    await h.acme.createConversation({ id: 'a2' });
    await h.acme.run('a2');
    const third = await refusal(h.acme.createConversation({ id: 'a3', message: 'go', run: true }));
    expect(third).toMatchObject({ status: 429, code: 'capacity_exhausted', retryAfterSeconds: 5 });
    await h.acme.createConversation({ id: 'a4', message: 'queued, not run' });
    expect(await refusal(h.acme.run('a4'))).toMatchObject({ status: 429, code: 'capacity_exhausted' });
    expect(await refusal(h.acme.sendMessage('a4', 'again', { run: true }))).toMatchObject({ status: 429 });
    // another tenant still has room, up to the overall limit
    await h.globex.createConversation({ id: 'g1', message: 'go', run: true });
    await h.globex.createConversation({ id: 'g2' });
    expect(await refusal(h.globex.run('g2'))).toMatchObject({ status: 429, code: 'capacity_exhausted' });
    // a slot frees when a run stops
    await h.acme.pause('a1');
    await h.acme.run('a4');
    expect((await h.acme.getConversation('a4')).status).toBe('running');
  });
});
