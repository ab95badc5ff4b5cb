import { TenantId } from '@flotilla/events';
import { z } from 'zod';
import { AGENT_ENDPOINTS } from './reach/endpoint-names.js';

const Int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** The gateway's settings (from FLOTILLA_GATEWAY_* variables; see docs/operations.md). */
export const GatewayConfig = z.object({
  host: z.string().min(1),
  port: Int(0, 65_535),
  /** Largest accepted JSON body. */
  maxBodyBytes: Int(1_024, 64 * 1024 * 1024),
  /** Largest file a workspace download or upload may be (moved in chunks through the tool runner that owns the workspace). */
  maxFileBytes: Int(1_024, 4 * 1024 * 1024 * 1024),
  /** Largest accepted inbound WebSocket frame. */
  maxFrameBytes: Int(1_024, 16 * 1024 * 1024),
  /** Sockets per conversation on this gateway instance. */
  maxSubscribersPerConversation: Int(1, 1_000_000),
  /** Bytes a socket may have queued before it counts as a slow consumer and is closed. */
  socketHighWaterBytes: Int(16 * 1024, 1024 * 1024 * 1024),
  /** Running conversations across all tenants before runs are refused with 429 (0 = no limit). */
  maxRunning: Int(0, 10_000_000),
  /** Running conversations per tenant before runs are refused with 429 (0 = no limit). */
  maxRunningPerTenant: Int(0, 10_000_000),
  /** Messages waiting for their turn on one conversation (commands run one at a time per conversation) before more get 429 (0 = no limit). */
  maxQueuedMessages: Int(0, 1_000_000),
  /** Requests per second per API key (token bucket; burst = 2×). 0 = no limit. */
  rateLimitPerSecond: Int(0, 1_000_000),
  /** Seconds a new socket has to authenticate with its first frame. */
  authTimeoutMs: Int(100, 600_000),
  /** The admin key (plain; compared by hash): may mint API keys. Unset = no admin routes. */
  adminKey: z.string().min(16).optional(),
  /** Keys to provision at start-up: `tenant:key` pairs, comma-separated. Stored hashed. */
  bootstrapKeys: z.array(z.strictObject({ tenant: TenantId, key: z.string().min(16) })),
  /** Serve the web UI at `/`. */
  webUi: z.boolean(),
  /** The agent endpoints to serve (docs/api.md, "Flotilla as a tool of others"): none unless the operator names them. */
  agentEndpoints: z.array(z.enum(AGENT_ENDPOINTS)),
  /**
   * Seconds a conversation of a tenant is kept after its last event (the tenant's own, else `*`'s;
   * none: kept until deleted); a conversation's spec may keep it for less (docs/api.md, "Retention").
   */
  retention: z.record(
    z.union([TenantId, z.literal('*')]),
    z
      .number()
      .int()
      .min(1)
      .max(100 * 365 * 86_400),
  ),
  /** How often the gateway looks for conversations idle past their retention. */
  retentionSweepMs: Int(100, 86_400_000),
  /** The shortest interval a schedule may run at (an `every`, and how often a cron may fire: below 60 a cron may fire every second). */
  scheduleMinIntervalSeconds: Int(1, 86_400),
  /** How late a schedule's run may be taken before a `missed_runs: skip` schedule skips it (it came due while no gateway could take it). */
  scheduleMissedRunGraceMs: Int(1_000, 86_400_000),
});
export type GatewayConfig = z.infer<typeof GatewayConfig>;

const VARIABLES: Record<string, string> = {
  host: 'FLOTILLA_GATEWAY_HOST',
  port: 'FLOTILLA_GATEWAY_PORT',
  maxBodyBytes: 'FLOTILLA_GATEWAY_MAX_BODY_BYTES',
  maxFileBytes: 'FLOTILLA_GATEWAY_MAX_FILE_BYTES',
  maxFrameBytes: 'FLOTILLA_GATEWAY_MAX_FRAME_BYTES',
  maxSubscribersPerConversation: 'FLOTILLA_GATEWAY_MAX_SUBSCRIBERS',
  socketHighWaterBytes: 'FLOTILLA_GATEWAY_SOCKET_HIGH_WATER_BYTES',
  maxRunning: 'FLOTILLA_MAX_RUNNING',
  maxRunningPerTenant: 'FLOTILLA_MAX_RUNNING_PER_TENANT',
  maxQueuedMessages: 'FLOTILLA_GATEWAY_MAX_QUEUED_MESSAGES',
  rateLimitPerSecond: 'FLOTILLA_GATEWAY_RATE_LIMIT',
  authTimeoutMs: 'FLOTILLA_GATEWAY_AUTH_TIMEOUT_MS',
  adminKey: 'FLOTILLA_ADMIN_KEY',
  bootstrapKeys: 'FLOTILLA_API_KEYS',
  webUi: 'FLOTILLA_GATEWAY_WEB_UI',
  agentEndpoints: 'FLOTILLA_GATEWAY_AGENT_ENDPOINTS',
  retention: 'FLOTILLA_RETENTION',
  retentionSweepMs: 'FLOTILLA_RETENTION_SWEEP_MS',
  scheduleMinIntervalSeconds: 'FLOTILLA_SCHEDULE_MIN_INTERVAL_SECONDS',
  scheduleMissedRunGraceMs: 'FLOTILLA_SCHEDULE_MISSED_RUN_GRACE_MS',
};

export const DEFAULT_GATEWAY_CONFIG: GatewayConfig = {
  host: '127.0.0.1',
  port: 8080,
  maxBodyBytes: 1024 * 1024,
  maxFileBytes: 64 * 1024 * 1024,
  maxFrameBytes: 256 * 1024,
  maxSubscribersPerConversation: 2_000,
  socketHighWaterBytes: 1024 * 1024,
  maxRunning: 0,
  maxRunningPerTenant: 0,
  maxQueuedMessages: 100,
  rateLimitPerSecond: 200,
  authTimeoutMs: 5_000,
  bootstrapKeys: [],
  webUi: true,
  agentEndpoints: [],
  retention: {},
  retentionSweepMs: 60_000,
  scheduleMinIntervalSeconds: 60,
  scheduleMissedRunGraceMs: 60_000,
};

/** Settings whose variables are not one plain value each. */
const PARSED_APART: ReadonlySet<keyof GatewayConfig> = new Set([
  'bootstrapKeys',
  'webUi',
  'retention',
  'agentEndpoints',
]);

/** Reads the gateway config from the environment, failing fast and naming the bad variable. */
export function loadGatewayConfig(environment: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const read = (key: keyof GatewayConfig): string | undefined => environment[VARIABLES[key]!] || undefined;
  const keys = listOf(read('bootstrapKeys')).map((pair) => {
    const at = pair.indexOf(':');
    return { tenant: pair.slice(0, Math.max(0, at)), key: pair.slice(at + 1) };
  });
  const result = GatewayConfig.safeParse({
    ...DEFAULT_GATEWAY_CONFIG,
    ...Object.fromEntries(
      (Object.keys(VARIABLES) as (keyof GatewayConfig)[])
        .filter((key) => !PARSED_APART.has(key) && read(key) !== undefined)
        .map((key) => [key, read(key)]),
    ),
    bootstrapKeys: keys,
    retention: retentionOf(read('retention')),
    agentEndpoints: listOf(read('agentEndpoints')),
    webUi: read('webUi') === undefined ? true : !['0', 'false', 'no'].includes(read('webUi')!.toLowerCase()),
  });
  if (!result.success) {
    const problems = result.error.issues.map(
      (issue) => `${VARIABLES[String(issue.path[0])] ?? issue.path.join('.')}: ${issue.message}`,
    );
    throw new Error(`invalid gateway configuration: ${problems.join('; ')}`);
  }
  return result.data;
}

/** A comma-separated list, blanks dropped. */
function listOf(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

/** `FLOTILLA_RETENTION`: `tenant=seconds` pairs, comma-separated (`*` for every other tenant), as an object for the schema to check. */
function retentionOf(value: string | undefined): Record<string, unknown> {
  const pairs = listOf(value).map((pair) => {
    const at = pair.indexOf('=');
    const seconds = pair.slice(at + 1).trim();
    return [pair.slice(0, Math.max(0, at)).trim(), /^\d+$/.test(seconds) ? Number(seconds) : seconds] as const;
  });
  return Object.fromEntries(pairs);
}
