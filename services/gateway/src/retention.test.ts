import { initialSnapshot, type ConversationSnapshot } from '@flotilla/state';
import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from './config.js';
import { idlePast, retentionOf } from './retention.js';

const at = '2026-12-01T12:00:00.000Z';
const snapshot = (
  tenant: string,
  changes: Partial<ConversationSnapshot> = {},
  specSeconds: number | null = null,
): ConversationSnapshot => ({
  ...initialSnapshot({ tenant, conversation: 'c1' }),
  last_seq: 3,
  updated_at: at,
  status: 'finished',
  agent_spec: { seq: 2, stream_seq: 2, model: 'm', template: null, on_busy: null, retention_seconds: specSeconds },
  ...changes,
});

describe('retention', () => {
  it("keeps a conversation for the shorter of its spec's and its tenant's retention (the tenant's own, else `*`'s), and forever when neither says", () => {
    const tenants = { acme: 3_600, '*': 86_400 };
    expect(retentionOf(snapshot('acme'), tenants)).toBe(3_600);
    expect(retentionOf(snapshot('globex'), tenants)).toBe(86_400);
    expect(retentionOf(snapshot('acme', {}, 60), tenants)).toBe(60);
    expect(retentionOf(snapshot('acme', {}, 7_200), tenants)).toBe(3_600);
    expect(retentionOf(snapshot('globex', {}, 120), {})).toBe(120);
    expect(retentionOf(snapshot('globex'), { acme: 10 })).toBeUndefined();
  });

  it('counts idleness from the last event, never while the conversation runs', () => {
    const start = Date.parse(at);
    expect(idlePast(snapshot('acme'), 60, start + 59_999)).toBe(false);
    expect(idlePast(snapshot('acme'), 60, start + 60_000)).toBe(true);
    expect(idlePast(snapshot('acme', { status: 'running' }), 60, start + 3_600_000)).toBe(false);
    expect(idlePast(snapshot('acme', { status: 'waiting_for_confirmation' }), 60, start + 3_600_000)).toBe(true);
  });

  it('reads FLOTILLA_RETENTION as tenant=seconds pairs, naming the variable when one is not', () => {
    expect(
      loadGatewayConfig({ FLOTILLA_RETENTION: 'acme=3600, *=86400', FLOTILLA_RETENTION_SWEEP_MS: '500' }),
    ).toMatchObject({ retention: { acme: 3_600, '*': 86_400 }, retentionSweepMs: 500 });
    expect(loadGatewayConfig({}).retention).toEqual({});
    expect(() => loadGatewayConfig({ FLOTILLA_RETENTION: 'acme=a week' })).toThrow(/FLOTILLA_RETENTION/);
    expect(() => loadGatewayConfig({ FLOTILLA_RETENTION: 'acme=0' })).toThrow(/FLOTILLA_RETENTION/);
    expect(() => loadGatewayConfig({ FLOTILLA_RETENTION: 'no tenant=5' })).toThrow(/FLOTILLA_RETENTION/);
  });
});
