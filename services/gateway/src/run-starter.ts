import type { ConversationRef } from '@flotilla/log';
import type { Logger } from 'pino';
import { ApiError } from './api-error.js';
import type { ConversationIndex } from './conversation-index.js';
import { CLAIM_TIMEOUT_MS, type RunQueue } from './run-queue.js';

export type RunStarterOptions = {
  readonly queue: RunQueue;
  readonly index: ConversationIndex;
  /** The tenant's limit of running conversations (FLOTILLA_MAX_RUNNING_PER_TENANT, > 0). */
  readonly limit: number;
  /** Starts a queued run (ConversationService.startQueued). */
  readonly start: (ref: ConversationRef) => Promise<unknown>;
  /** This gateway's instance id: whose claim an entry carries. */
  readonly holder: string;
  readonly logger: Logger;
  /** How often the queue is looked at besides its changes and the index's (a run that ended on a snapshot this gateway missed). Default 1 s. */
  readonly intervalMs?: number;
};

/**
 * Starts queued runs as their tenant's slots free up, in the order they were queued, on every
 * gateway: a run is claimed with compare-and-set on its queue entry (one gateway wins it), started
 * with the run command (a no-op on a conversation running already), then taken out of the queue.
 * A gateway that stops between claim and start leaves a claim that another takes over after
 * CLAIM_TIMEOUT_MS, so a queued run is never lost with a gateway. A run that cannot start (the
 * conversation is gone, or waits for something a run cannot give) leaves the queue.
 *
 * Each gateway counts running conversations in its own index (from the snapshot bucket, a few
 * milliseconds behind the log): two gateways that see one slot free at the same moment may both
 * start a run, and the tenant is one over its limit until a run ends.
 */
export class RunStarter {
  readonly #options: RunStarterOptions;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #again = false;
  #stopped = false;

  constructor(options: RunStarterOptions) {
    this.#options = options;
  }

  start(): void {
    this.#options.queue.onChange(() => this.poke());
    this.#timer = setInterval(() => this.poke(), this.#options.intervalMs ?? 1_000);
    this.#timer.unref();
    this.poke();
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
  }

  /** Look at the queue now (a run of some tenant may have ended). */
  poke(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    void this.#pass()
      .catch((error: unknown) => this.#options.logger.warn({ err: error }, 'starting queued runs failed; retrying'))
      .finally(() => {
        this.#running = false;
        if (this.#again) {
          this.#again = false;
          this.poke();
        }
      });
  }

  async #pass(): Promise<void> {
    const { queue, index, limit, holder } = this.#options;
    for (const tenant of queue.tenants()) {
      let free = limit - index.running(tenant);
      for (const run of queue.queued(tenant)) {
        if (free <= 0 || this.#stopped) break;
        // another gateway's claim, recent enough: that run is being started
        if (
          run.claimed_by !== undefined &&
          run.claimed_by !== holder &&
          Date.now() - (run.claimed_at ?? 0) < CLAIM_TIMEOUT_MS
        ) {
          free -= 1;
          continue;
        }
        const claim = await queue.claim(tenant, run, holder);
        if (claim === undefined) continue; // another gateway changed it: the watch brings what it did
        const ref = { tenant, conversation: run.conversation };
        try {
          await this.#options.start(ref);
        } catch (error) {
          if (!(error instanceof ApiError) || error.statusCode >= 500) throw error; // left claimed: retried once the claim is old
          // gone (404), or in a state a run cannot leave (409): it leaves the queue
          this.#options.logger.info(
            { tenant, conversation: run.conversation, code: error.statusCode },
            'a queued run could not start; it leaves the queue',
          );
        }
        await queue.remove(ref, claim);
        free -= 1;
      }
    }
  }
}
