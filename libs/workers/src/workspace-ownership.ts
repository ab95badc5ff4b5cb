import type { ConversationRef } from '@flotilla/log';
import { setRecent } from '@flotilla/runtime';
import { conversationKey as key, type ToolRunnerDependencies } from './tool-runner-dependencies.js';

/** Ownerships remembered (this runner's and its peers'): well above the live conversations one runner serves. */
const MAX_REMEMBERED_OWNERSHIPS = 100_000;

/**
 * Which workspaces this runner owns, as far as it may tell without asking KV, and which another
 * live runner owns: the ownerships it has seen, and its own heartbeats, which say how long what
 * it saw still holds.
 */
export class WorkspaceOwnership {
  readonly #deps: Pick<ToolRunnerDependencies, 'runners' | 'runnerId'>;
  /** As of when this runner knows it owns a conversation's workspace (the start of the claim, or of the KV read, that showed it). */
  readonly #owned = new Map<string, number>();
  /** This runner's heartbeats: the time the last stored one carries, and since when they have come without a gap (see ownsRecently). */
  readonly #beats = { lastAt: 0, unbrokenSince: Number.POSITIVE_INFINITY };
  /** Workspaces another live runner owns (forwarded to it), and until when its heartbeat says it is alive. */
  readonly #peerOwners = new Map<string, { readonly runner: string; readonly until: number }>();

  constructor(deps: Pick<ToolRunnerDependencies, 'runners' | 'runnerId'>) {
    this.#deps = deps;
  }

  /**
   * The other runner that owns the workspace, as read while its heartbeat still says it is alive:
   * no runner takes a workspace over before its owner's last heartbeat is a whole window old, so
   * until then a read of the owner could only find the same runner (or none, once deleted).
   */
  peerOwner(ref: ConversationRef): string | undefined {
    const peer = this.#peerOwners.get(key(ref));
    if (peer === undefined) return undefined;
    if (Date.now() < peer.until) return peer.runner;
    this.#peerOwners.delete(key(ref));
    return undefined;
  }

  /** Remembers `runner` as the workspace's owner when its heartbeat says it is alive; false when not. */
  async rememberPeer(ref: ConversationRef, runner: string): Promise<boolean> {
    const until = await this.#deps.runners.aliveUntil(runner);
    if (until === undefined) return false;
    setRecent(this.#peerOwners, key(ref), { runner, until }, MAX_REMEMBERED_OWNERSHIPS);
    return true;
  }

  /** Forgets the peer remembered as the workspace's owner: it did not answer, so the next delivery reads the owner again. */
  forgetPeer(ref: ConversationRef): void {
    this.#peerOwners.delete(key(ref));
  }

  /** Notes that the workspace was this runner's as of `asOf`, the time the read or claim that showed it began. */
  confirmOwned(ref: ConversationRef, asOf: number): void {
    setRecent(this.#owned, key(ref), asOf, MAX_REMEMBERED_OWNERSHIPS);
  }

  /** Forgets that the workspace was this runner's (it was deleted). */
  forget(ref: ConversationRef): void {
    this.#owned.delete(key(ref));
  }

  /** Writes this runner's heartbeat and notes when it landed (see ownsRecently). */
  async beat(): Promise<void> {
    const at = await this.#deps.runners.heartbeat(this.#deps.runnerId);
    const landed = Date.now();
    // the last heartbeat others could see was older than half the window: they may have taken workspaces over meanwhile
    if (landed - this.#beats.lastAt >= this.#deps.runners.livenessMs / 2) this.#beats.unbrokenSince = landed;
    this.#beats.lastAt = Math.max(this.#beats.lastAt, at);
  }

  /**
   * Whether the workspace is this runner's, without asking KV. Another runner takes a workspace
   * over only once its owner's last heartbeat is a whole window old; so an ownership shown since
   * this runner's heartbeats last came without a gap of half the window, while its last one is
   * younger than half the window, still holds (the half is a margin for clocks; the ages are
   * wall-clock time, so a runner that stalled asks KV again).
   */
  ownsRecently(ref: ConversationRef): boolean {
    const confirmedAt = this.#owned.get(key(ref));
    if (confirmedAt === undefined) return false;
    if (confirmedAt >= this.#beats.unbrokenSince && Date.now() - this.#beats.lastAt < this.#deps.runners.livenessMs / 2)
      return true;
    this.#owned.delete(key(ref));
    return false;
  }
}
