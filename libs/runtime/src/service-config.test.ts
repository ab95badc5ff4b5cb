import { describe, expect, it } from 'vitest';
import { loadServiceConfig } from './service-config.js';

describe('service configuration', () => {
  it('reads every setting through one schema, with defaults', () => {
    const config = loadServiceConfig('step-worker', {
      FLOTILLA_HOME: '/data',
      FLOTILLA_CACHE_CONVERSATIONS: '50',
      FLOTILLA_RUNNER_LIVENESS_MS: '3000',
    });
    expect(config).toMatchObject({
      cacheConversations: 50,
      runnerLivenessMs: 3_000,
      workspaces: '/data/workspaces',
      projectorSettleMs: 100,
      condensationWarnMs: 60_000,
      healthHost: '127.0.0.1',
    });
    expect(config.bus.servers).toEqual(['nats://127.0.0.1:4222']);
    expect(config.storage.replicas).toBe(1);
    expect(config.otlpEndpoint).toBeUndefined();
    expect(
      loadServiceConfig('gateway', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318' }).otlpEndpoint,
    ).toBe('http://otel-collector:4318');
  });

  it.each([
    ['FLOTILLA_RUNNER_LIVENESS_MS', 'ten seconds'],
    ['FLOTILLA_CACHE_CONVERSATIONS', '0'],
    ['FLOTILLA_CONDENSATION_WARN_MS', '10'],
    ['FLOTILLA_PROJECTOR_SETTLE_MS', '-1'],
    ['FLOTILLA_CONCURRENCY', '1.5'],
    ['FLOTILLA_REPLICAS', '9'],
    ['FLOTILLA_NATS_URL', 'http://nats:4222'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'otel-collector:4318'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'grpc://otel-collector:4317'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'http://user:secret@otel-collector:4318'],
  ])('refuses %s=%s, naming the variable (a typo never becomes NaN)', (name, value) => {
    expect(() => loadServiceConfig('step-worker', { [name]: value })).toThrow(name);
  });
});
