import { describe, expect, it } from 'vitest';
import { loadLauncherConfig } from './config.js';

describe('launcher configuration', () => {
  it('runs bundles by default and the TypeScript when FLOTILLA_FROM_SOURCE says so', () => {
    expect(loadLauncherConfig({}).fromSource).toBe(false);
    expect(loadLauncherConfig({ FLOTILLA_FROM_SOURCE: '1' }).fromSource).toBe(true);
    expect(loadLauncherConfig({ FLOTILLA_FROM_SOURCE: 'true' }).fromSource).toBe(true);
    expect(loadLauncherConfig({ FLOTILLA_FROM_SOURCE: '0' }).fromSource).toBe(false);
  });

  it('names the variable that is wrong', () => {
    expect(() => loadLauncherConfig({ FLOTILLA_FROM_SOURCE: 'yes' })).toThrow(/FLOTILLA_FROM_SOURCE/);
    expect(() => loadLauncherConfig({ FLOTILLA_NATS_PORT: '99999' })).toThrow(/FLOTILLA_NATS_PORT/);
    expect(() => loadLauncherConfig({ FLOTILLA_NATS_NODES: '2' })).toThrow(/FLOTILLA_NATS_NODES: must be 1, or 3 to 5/);
    expect(() => loadLauncherConfig({ FLOTILLA_TENANT_TAPS: 'acme,no.dots' })).toThrow(/FLOTILLA_TENANT_TAPS/);
  });

  it('reads the cluster size and the tenant taps', () => {
    expect(loadLauncherConfig({}).natsNodes).toBe(1);
    expect(loadLauncherConfig({ FLOTILLA_NATS_NODES: '3' }).natsNodes).toBe(3);
    expect(loadLauncherConfig({ FLOTILLA_TENANT_TAPS: ' acme, globex ' }).tenantTaps).toEqual(['acme', 'globex']);
  });
});
