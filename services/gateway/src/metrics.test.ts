import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from './test-support/gateway-harness.js';
import { send } from './test-support/http-probe.js';

let h: GatewayHarness;
beforeAll(async () => {
  h = await startGatewayHarness();
});
afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
});

describe('the gateway’s /metrics', () => {
  it('has its own metrics and, as every service’s, the Node process’s, labelled with the service', async () => {
    await send(h, { method: 'GET', url: '/health' });
    const reply = await send(h, { method: 'GET', url: '/metrics' });
    expect(reply.status).toBe(200);
    for (const metric of [
      'flotilla_http_requests_total',
      'flotilla_ws_sockets',
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
    ]) {
      expect(reply.text, metric).toMatch(new RegExp(`^${metric}\\{[^}]*service="gateway"`, 'm'));
    }
  });
});
