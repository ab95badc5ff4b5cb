import { resolve } from 'node:path';
import { z } from 'zod';

const Port = z.coerce.number().int().min(1).max(65_535);

/** Launcher settings, from the environment; every variable is optional. */
export const LauncherConfig = z.object({
  /** Where the embedded system keeps its data (nats-server store, workspaces). */
  home: z.string().min(1),
  /** Use this NATS server instead of starting one. */
  natsUrl: z.string().url().optional(),
  /** Port for the embedded nats-server; a free one is chosen when it is busy. */
  natsPort: Port,
  /** Embedded nats-servers: 1, or a JetStream cluster of 3 to 5 on loopback (the stream and buckets then R3). */
  natsNodes: z.coerce
    .number()
    .int()
    .refine((nodes) => nodes === 1 || (nodes >= 3 && nodes <= 5), 'must be 1, or 3 to 5 for a cluster'),
  streamName: z.string().regex(/^[A-Za-z0-9_-]+$/),
  /** Port of the gateway (REST, WebSocket, web UI); a free one is chosen when it is busy. */
  gatewayPort: Port,
  /** Tenants that get a tap of their own on the embedded server (user `tap-<tenant>`, confined to the tenant's subjects). */
  tenantTaps: z.array(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'tenants are 1-64 characters of A-Z a-z 0-9 _ -')),
  /** Tenant of the API key the launcher provisions for local use. */
  tenant: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  /** Run the services' TypeScript under tsx instead of their bundles (see bundleService). */
  fromSource: z.enum(['0', '1', 'false', 'true']).transform((value) => value === '1' || value === 'true'),
});
export type LauncherConfig = z.infer<typeof LauncherConfig>;

export function loadLauncherConfig(environment: NodeJS.ProcessEnv = process.env): LauncherConfig {
  const result = LauncherConfig.safeParse({
    home: resolve(environment['FLOTILLA_HOME'] ?? '.flotilla'),
    natsUrl: environment['FLOTILLA_NATS_URL'] || undefined,
    natsPort: environment['FLOTILLA_NATS_PORT'] ?? 14_222,
    natsNodes: environment['FLOTILLA_NATS_NODES'] || 1,
    streamName: environment['FLOTILLA_STREAM'] ?? 'FLOTILLA_EVENTS',
    gatewayPort: environment['FLOTILLA_GATEWAY_PORT'] ?? 8_080,
    tenant: environment['FLOTILLA_TENANT'] ?? 'local',
    tenantTaps: (environment['FLOTILLA_TENANT_TAPS'] ?? '')
      .split(',')
      .map((tenant) => tenant.trim())
      .filter(Boolean),
    fromSource: environment['FLOTILLA_FROM_SOURCE'] || '0',
  });
  if (!result.success) {
    const names: Record<string, string> = {
      home: 'FLOTILLA_HOME',
      natsUrl: 'FLOTILLA_NATS_URL',
      natsPort: 'FLOTILLA_NATS_PORT',
      natsNodes: 'FLOTILLA_NATS_NODES',
      streamName: 'FLOTILLA_STREAM',
      gatewayPort: 'FLOTILLA_GATEWAY_PORT',
      tenant: 'FLOTILLA_TENANT',
      tenantTaps: 'FLOTILLA_TENANT_TAPS',
      fromSource: 'FLOTILLA_FROM_SOURCE',
    };
    const problems = result.error.issues.map(
      (issue) => `${names[String(issue.path[0])] ?? issue.path.join('.')}: ${issue.message}`,
    );
    throw new Error(`invalid launcher configuration: ${problems.join('; ')}`);
  }
  return result.data;
}
