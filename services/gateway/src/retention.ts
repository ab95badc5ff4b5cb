import type { WebhookEvent } from '@flotilla/api';
import type { ConversationSnapshot } from '@flotilla/state';
import { enqueueDelivery, webhookEventId, type WebhookRegistry } from '@flotilla/webhooks';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import type { ConversationIndex } from './conversation-index.js';
import type { ConversationService } from './conversation-service.js';

/** Seconds a tenant's conversations are kept after their last event: by tenant, `*` for the others (GatewayConfig.retention). */
export type TenantRetention = Readonly<Record<string, number>>;

/**
 * Seconds the conversation is kept after its last event: the shorter of its spec's
 * (`retention.idle_seconds`) and its tenant's; undefined when neither says (kept until deleted).
 */
export function retentionOf(snapshot: ConversationSnapshot, tenants: TenantRetention): number | undefined {
  const candidates = [
    snapshot.agent_spec?.retention_seconds ?? undefined,
    tenants[snapshot.tenant] ?? tenants['*'],
  ].filter((seconds) => seconds !== undefined);
  return candidates.length === 0 ? undefined : Math.min(...candidates);
}

/** True when the conversation has been idle past `seconds` at `now`: not running, and its last event older than that. */
export function idlePast(snapshot: ConversationSnapshot, seconds: number, now: number): boolean {
  if (snapshot.status === 'running' || snapshot.updated_at === null) return false;
  return Date.parse(snapshot.updated_at) + seconds * 1_000 <= now;
}

/** Tells the tenant's webhooks that listen for it that a conversation is about to be deleted for its retention. */
export type ExpiryAnnouncer = (snapshot: ConversationSnapshot, idleSeconds: number, now: Date) => Promise<void>;

/**
 * The announcement as the webhooks service delivers every event: one job per webhook of the
 * tenant that chose `conversation.expiring`, stored in its delivery queue before this resolves
 * (a queue that is not there fails it, and the conversation waits for the next sweep). The
 * event's id is derived from the conversation and its last event, so two gateways announcing
 * the same expiry store one delivery (the queue's de-duplication), and a receiver sees one id.
 */
export function webhookAnnouncer(registry: WebhookRegistry, js: JetStreamClient): ExpiryAnnouncer {
  return async (snapshot, idleSeconds, now) => {
    const webhooks = (await registry.list(snapshot.tenant)).filter((webhook) =>
      webhook.events.includes('conversation.expiring'),
    );
    if (webhooks.length === 0) return;
    const event: WebhookEvent = {
      v: 1,
      id: webhookEventId(
        snapshot.tenant,
        snapshot.conversation,
        `expiring.${snapshot.last_seq}`,
        'conversation.expiring',
      ),
      created_at: now.toISOString(),
      tenant: snapshot.tenant,
      type: 'conversation.expiring',
      data: {
        conversation: snapshot.conversation,
        seq: snapshot.last_seq,
        status: snapshot.status,
        last_activity_at: snapshot.updated_at!,
        idle_seconds: idleSeconds,
      },
    };
    for (const webhook of webhooks)
      await enqueueDelivery(js, {
        v: 1,
        tenant: snapshot.tenant,
        webhook: webhook.id,
        enqueued_at: now.toISOString(),
        event,
      });
  };
}

/**
 * Deletes the conversations idle past their retention, looking every `everyMs` through the
 * gateway's index of snapshots (no read of any log to find them). Each is checked again at its
 * log's tail in its turn of commands, announced, then removed as a DELETE removes it (log,
 * snapshot, workspace, secrets, its sub-agents' conversations). Every gateway sweeps: the same
 * expiry found by two is announced once (webhookAnnouncer) and deleted by the first.
 */
export class RetentionSweeper {
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<number> | undefined;

  constructor(
    private readonly index: ConversationIndex,
    private readonly conversations: ConversationService,
    private readonly tenants: TenantRetention,
    private readonly announce: ExpiryAnnouncer,
    private readonly logger: Logger,
  ) {}

  start(everyMs: number): void {
    this.#timer = setInterval(() => void this.sweep(), everyMs);
    this.#timer.unref();
  }

  /** One look; resolves with how many conversations it deleted (a sweep still running is waited for, not doubled). */
  sweep(now = Date.now()): Promise<number> {
    this.#sweeping ??= this.#sweep(now).finally(() => (this.#sweeping = undefined));
    return this.#sweeping;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#sweeping?.catch(() => undefined);
  }

  async #sweep(now: number): Promise<number> {
    let deleted = 0;
    for (const snapshot of [...this.index.all()]) {
      const seconds = retentionOf(snapshot, this.tenants);
      if (seconds === undefined || !idlePast(snapshot, seconds, now)) continue;
      const ref = { tenant: snapshot.tenant, conversation: snapshot.conversation };
      try {
        const expired = await this.conversations.expire(
          ref,
          (current) => {
            const kept = retentionOf(current, this.tenants);
            return kept !== undefined && idlePast(current, kept, now) ? kept : undefined;
          },
          (current, kept) => this.announce(current, kept, new Date(now)),
        );
        if (expired) {
          deleted += 1;
          this.logger.info(
            {
              tenant: ref.tenant,
              conversation: ref.conversation,
              idle_seconds: seconds,
              last_activity_at: snapshot.updated_at,
            },
            'deleted a conversation idle past its retention',
          );
        }
      } catch (error) {
        // announced or not, it is still there: the next sweep tries again
        this.logger.warn(
          { err: error, tenant: ref.tenant, conversation: ref.conversation },
          'a conversation idle past its retention could not be deleted now',
        );
      }
    }
    return deleted;
  }
}
