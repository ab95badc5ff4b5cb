import type { CommandResult } from '@flotilla/api';
import { draftEvent, withPositionalIds } from '@flotilla/events';
import { appendWithRetry, type ConversationRef, type EventLog } from '@flotilla/log';
import { SecretsError, type SecretWriter } from '@flotilla/secrets';
import type { Logger } from 'pino';
import { ApiError } from './api-error.js';
import type { ConversationService } from './conversation-service.js';

/**
 * Secrets as the gateway serves them: a conversation's own (each change appended to its log as
 * a `secret_changed` event, name and action only) and the tenant's defaults (no log: they belong
 * to no conversation). Values go into the store and never come back out of the gateway: its
 * SecretWriter cannot read the values' bucket (its NATS credential need not allow it).
 * Without a store (no FLOTILLA_SECRETS_KEY_FILE) every call answers 503 secrets_not_configured.
 */
export class SecretService {
  constructor(
    readonly store: SecretWriter | undefined,
    readonly conversations: ConversationService,
    readonly logger: Logger,
  ) {}

  get available(): boolean {
    return this.store !== undefined;
  }

  get #log(): EventLog {
    return this.conversations.log;
  }

  /**
   * Sets a conversation's secret and appends `secret_changed` (set), in the conversation's line of
   * commands (`ConversationService.inTurn`). The store is written after the tail is read and the event appended expecting that tail, so concurrent changes of one
   * name land in the log in the order the store saw them (a loser re-reads, re-writes, re-appends).
   */
  async setForConversation(ref: ConversationRef, name: string, value: string): Promise<CommandResult> {
    const store = this.#require();
    let written = false;
    const commit = await this.conversations.inTurn(ref, () =>
      this.#guard(name, () =>
        appendWithRetry(this.#log, ref, async (tail) => {
          if (tail.lastSeq === 0) {
            // deleted while we wrote: take the value back out rather than leave it to a future namesake
            if (written) await store.remove(ref, name).catch(() => undefined);
            throw ApiError.notFound(ref.conversation);
          }
          await store.set(ref, name, value);
          written = true;
          return withPositionalIds(
            [draftEvent({ ...ref, source: 'user' }, 'secret_changed', { name, action: 'set' })],
            tail.lastSeq + 1,
          );
        }),
      ),
    );
    return this.#result(ref, commit!.lastSeq);
  }

  /** Removes a conversation's secret and appends `secret_changed` (removed); 404 secret_not_found when it has none of that name. */
  async removeForConversation(ref: ConversationRef, name: string): Promise<CommandResult> {
    const store = this.#require();
    let removed = false;
    const commit = await this.conversations.inTurn(ref, () =>
      this.#guard(name, () =>
        appendWithRetry(this.#log, ref, async (tail) => {
          if (tail.lastSeq === 0) throw ApiError.notFound(ref.conversation);
          if (await store.remove(ref, name)) removed = true;
          return removed
            ? withPositionalIds(
                [draftEvent({ ...ref, source: 'user' }, 'secret_changed', { name, action: 'removed' })],
                tail.lastSeq + 1,
              )
            : null;
        }),
      ),
    );
    if (!commit) throw secretNotFound(name, 'this conversation');
    return this.#result(ref, commit.lastSeq);
  }

  /** The names of a conversation's own secrets (its tenant's defaults are listed apart). */
  async namesForConversation(ref: ConversationRef): Promise<string[]> {
    const store = this.#require();
    if ((await this.#log.tail(ref)).lastSeq === 0) throw ApiError.notFound(ref.conversation);
    return this.#guard(undefined, () => store.names(ref));
  }

  async setForTenant(tenant: string, name: string, value: string): Promise<void> {
    const store = this.#require();
    await this.#guard(name, () => store.set({ tenant }, name, value));
    this.logger.info({ tenant, secret: name }, 'tenant secret set');
  }

  async removeForTenant(tenant: string, name: string): Promise<void> {
    const store = this.#require();
    if (!(await this.#guard(name, () => store.remove({ tenant }, name))))
      throw secretNotFound(name, 'the tenant defaults');
    this.logger.info({ tenant, secret: name }, 'tenant secret removed');
  }

  namesForTenant(tenant: string): Promise<string[]> {
    const store = this.#require();
    return this.#guard(undefined, () => store.names({ tenant }));
  }

  /**
   * The delete hook: removes every secret of one conversation (no event: its log is going away).
   * A no-op when secrets are not configured. Call it before the log is purged, so that a failure
   * (503, retry the delete) never leaves secrets behind for a later conversation of the same id.
   */
  async removeConversationSecrets(ref: ConversationRef): Promise<void> {
    if (!this.store) return;
    const store = this.store;
    await this.#guard(undefined, () => store.removeAll(ref));
  }

  #require(): SecretWriter {
    if (this.store) return this.store;
    throw new ApiError(
      503,
      'secrets_not_configured',
      'Secrets are not configured on this gateway: set FLOTILLA_SECRETS_KEY_FILE to a file holding a key (base64 of 32 random bytes, ' +
        'e.g. `openssl rand -base64 32`), the same for the gateway and the tool runners, and restart them.',
    );
  }

  async #result(ref: ConversationRef, lastSeq: number): Promise<CommandResult> {
    // the snapshot catches up (lists and the index see the change); the status is its
    const status = await this.conversations.snapshot(ref).then(
      (snapshot) => snapshot.status,
      () => this.conversations.index.get(ref.tenant, ref.conversation)?.status ?? 'idle',
    );
    return { conversation: ref.conversation, status, last_seq: lastSeq, appended: true };
  }

  /** SecretsErrors as API errors: bad names and values are 400s naming the field, never quoting a value. */
  async #guard<T>(name: string | undefined, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof SecretsError)) throw error;
      switch (error.code) {
        case 'invalid_name':
          throw new ApiError(400, 'validation_failed', `params.name: ${error.message}`, [
            { path: 'params.name', message: error.message },
          ]);
        case 'invalid_value':
          throw new ApiError(400, 'validation_failed', `body.value: ${error.message}`, [
            { path: 'body.value', message: error.message },
          ]);
        case 'invalid_scope':
          throw new ApiError(400, 'validation_failed', error.message);
        case 'unavailable':
        case 'bucket_unavailable':
          this.logger.warn({ err: error, secret: name }, 'the secrets bucket is unavailable');
          throw new ApiError(503, 'unavailable', 'The secrets bucket is not reachable right now; retry.', undefined, 1);
        default:
          throw error;
      }
    }
  }
}

function secretNotFound(name: string, where: string): ApiError {
  return new ApiError(404, 'secret_not_found', `No secret ${name} in ${where}.`);
}
