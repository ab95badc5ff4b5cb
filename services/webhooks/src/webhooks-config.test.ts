import { describe, expect, it } from 'vitest';
import { DEFAULT_WEBHOOKS_SETTINGS, loadWebhooksConfig } from './webhooks-config.js';

describe('the webhooks service settings', () => {
  it('have defaults, and refuse private networks unless listed', () => {
    const config = loadWebhooksConfig({});
    expect(config).toMatchObject(DEFAULT_WEBHOOKS_SETTINGS);
    expect(config.addresses.allows('10.0.0.1')).toBe(false);
    expect(
      loadWebhooksConfig({ FLOTILLA_WEBHOOK_ALLOWED_NETWORKS: '10.0.0.0/8', FLOTILLA_WEBHOOK_MAX_ATTEMPTS: '3' }),
    ).toMatchObject({ maxAttempts: 3 });
  });

  it('refuse bad values naming the variable', () => {
    expect(() => loadWebhooksConfig({ FLOTILLA_WEBHOOK_MAX_ATTEMPTS: '0' })).toThrow(
      /^FLOTILLA_WEBHOOK_MAX_ATTEMPTS: /,
    );
    expect(() => loadWebhooksConfig({ FLOTILLA_WEBHOOK_TIMEOUT_MS: 'soon' })).toThrow(/^FLOTILLA_WEBHOOK_TIMEOUT_MS: /);
    expect(() =>
      loadWebhooksConfig({ FLOTILLA_WEBHOOK_RETRY_BASE_MS: '10000', FLOTILLA_WEBHOOK_RETRY_MAX_MS: '5000' }),
    ).toThrow(/FLOTILLA_WEBHOOK_RETRY_MAX_MS must be at least/);
    expect(() => loadWebhooksConfig({ FLOTILLA_WEBHOOK_ALLOWED_NETWORKS: 'intranet' })).toThrow(
      /^FLOTILLA_WEBHOOK_ALLOWED_NETWORKS: "intranet"/,
    );
  });
});
