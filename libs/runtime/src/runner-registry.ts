import { Buckets, openBucket, requestAnswer, RunnerSubjects } from '@flotilla/bus';
import type { KV } from '@nats-io/kv';
import type { ConversationRef } from '@flotilla/log';
import { headers, type NatsConnection } from '@nats-io/transport-node';
import { setRecent } from './recent-map.js';

export const DEFAULT_RUNNERS_BUCKET = Buckets.runners;
export const DEFAULT_WORKSPACES_BUCKET = Buckets.workspaces;

export type RunnerRegistryOptions = {
  readonly runnersBucket?: string;
  readonly workspacesBucket?: string;
  /** A runner whose heartbeat is older than this is dead. Default 10 s. */
  readonly livenessMs?: number;
  readonly replicas?: number;
  /** What this runner says of itself in each heartbeat (e.g. its sandbox), for the gateway's server info. */
  readonly sandbox?: Readonly<Record<string, unknown>>;
};

/** A live runner as its last heartbeat described it. */
export type RunnerInfo = {
  readonly runner: string;
  readonly at: number;
  readonly sandbox?: Readonly<Record<string, unknown>>;
};

export type WorkspaceOwner = { readonly runner: string; readonly revision: number };

/** Heartbeats remembered (runners come and go with their processes; a deployment runs tens). */
const MAX_REMEMBERED_RUNNERS = 1_000;

/** Headers naming the conversation of a runner request; the body is what the request carries. */
export const RunnerHeader = {
  Tenant: 'Flotilla-Tenant',
  Conversation: 'Flotilla-Conversation',
  StreamSeq: 'Flotilla-Stream-Seq',
  /** On a forwarded wake-up: no live runner owns the workspace, and the receiver owns the conversation's partition: it claims the workspace. */
  Claim: 'Flotilla-Claim',
} as const;

/**
 * Tool-runner liveness (a heartbeat key per runner in a bucket whose entries expire) and
 * workspace ownership (which runner owns which conversation's workspace, updated with CAS).
 */
export class RunnerRegistry {
  /** Each runner's last heartbeat read that said alive: until when it says so. */
  readonly #aliveUntil = new Map<string, number>();

  private constructor(
    private readonly runners: KV,
    private readonly workspaces: KV,
    readonly livenessMs: number,
    private readonly sandbox: Readonly<Record<string, unknown>> | undefined,
  ) {}

  static async open(nc: NatsConnection, options: RunnerRegistryOptions = {}): Promise<RunnerRegistry> {
    const livenessMs = options.livenessMs ?? 10_000;
    const runners = await openBucket(nc, options.runnersBucket ?? DEFAULT_RUNNERS_BUCKET, {
      history: 1,
      ttl: livenessMs,
      replicas: options.replicas ?? 1,
    });
    const workspaces = await openBucket(nc, options.workspacesBucket ?? DEFAULT_WORKSPACES_BUCKET, {
      history: 1,
      replicas: options.replicas ?? 1,
    });
    return new RunnerRegistry(runners, workspaces, livenessMs, options.sandbox);
  }

  /** Writes the runner's heartbeat; resolves, once it is stored, with the time it carries. */
  async heartbeat(runner: string): Promise<number> {
    const at = Date.now();
    await this.runners.put(runner, JSON.stringify({ at, ...(this.sandbox ? { sandbox: this.sandbox } : {}) }));
    return at;
  }

  /** Every runner alive now, with what its heartbeat says. */
  async list(): Promise<RunnerInfo[]> {
    const live: RunnerInfo[] = [];
    for await (const runner of await this.runners.keys()) {
      const entry = await this.runners.get(runner);
      if (!entry || entry.operation !== 'PUT') continue;
      try {
        const beat = entry.json<{ at: number; sandbox?: Record<string, unknown> }>();
        if (Date.now() - beat.at < this.livenessMs)
          live.push({ runner, at: beat.at, ...(beat.sandbox ? { sandbox: beat.sandbox } : {}) });
      } catch {
        // not a heartbeat of ours
      }
    }
    return live;
  }

  /** Is the runner alive? (a heartbeat newer than the liveness window, read now) */
  async isAlive(runner: string): Promise<boolean> {
    return (await this.#readAliveUntil(runner)) !== undefined;
  }

  /**
   * Until when (epoch ms) the runner is alive as its heartbeat says, or undefined when it is not.
   * Answered without a read while the heartbeat this registry last read still says alive: a read
   * could only find a newer one, and no runner takes over a workspace before its owner's last
   * heartbeat is a whole window old. What only a read would see is a runner that retired (its
   * heartbeat deleted as it stopped): `forget` one that did not answer a request.
   */
  async aliveUntil(runner: string): Promise<number | undefined> {
    const remembered = this.#aliveUntil.get(runner);
    if (remembered !== undefined && Date.now() < remembered) return remembered;
    return await this.#readAliveUntil(runner);
  }

  /** Read the runner's heartbeat again next time (a request to it went unanswered). */
  forget(runner: string): void {
    this.#aliveUntil.delete(runner);
  }

  async #readAliveUntil(runner: string): Promise<number | undefined> {
    const entry = await this.runners.get(runner);
    let until: number | undefined;
    if (entry?.operation === 'PUT') {
      try {
        until = entry.json<{ at: number }>().at + this.livenessMs;
      } catch {
        // not a heartbeat of ours
      }
    }
    if (until !== undefined && Date.now() < until) {
      setRecent(this.#aliveUntil, runner, until, MAX_REMEMBERED_RUNNERS);
      return until;
    }
    this.#aliveUntil.delete(runner);
    return undefined;
  }

  async retire(runner: string): Promise<void> {
    this.#aliveUntil.delete(runner);
    await this.runners.delete(runner).catch(() => undefined);
  }

  async owner(ref: ConversationRef): Promise<WorkspaceOwner | undefined> {
    const entry = await this.workspaces.get(key(ref));
    if (!entry || entry.operation !== 'PUT') return entry ? { runner: '', revision: entry.revision } : undefined;
    return { runner: entry.string(), revision: entry.revision };
  }

  /** Forget who owns the workspace (the conversation was deleted). */
  async release(ref: ConversationRef): Promise<void> {
    await this.workspaces.purge(key(ref)).catch(() => undefined);
  }

  /** Take the workspace (CAS against the owner we saw). False when someone else took it first. */
  async claim(ref: ConversationRef, runner: string, seen: WorkspaceOwner | undefined): Promise<boolean> {
    try {
      if (!seen) await this.workspaces.create(key(ref), runner);
      else await this.workspaces.update(key(ref), runner, seen.revision);
      return true;
    } catch {
      return false;
    }
  }
}

function key(ref: ConversationRef): string {
  return `${ref.tenant}.${ref.conversation}`;
}

/**
 * Asks the tool runner that owns the conversation's workspace (any runner when the owner is dead
 * or unknown) to remove the workspace, its shell and sandbox, and the ownership entry. Resolves
 * whether one answered that it did. `workspace` is the conversation whose workspace it works in
 * (a sub-agent's shared workspace is its parent's: its owner holds the child's shell and files).
 */
export async function requestWorkspaceDeletion(
  nc: NatsConnection,
  runners: RunnerRegistry,
  ref: ConversationRef,
  timeoutMs = 10_000,
  workspace: ConversationRef = ref,
): Promise<boolean> {
  const owner = await runners.owner(workspace);
  const alive = owner?.runner ? await runners.isAlive(owner.runner) : false;
  const request = headers();
  request.set(RunnerHeader.Tenant, ref.tenant);
  request.set(RunnerHeader.Conversation, ref.conversation);
  try {
    const reply = await requestAnswer(
      nc,
      alive ? RunnerSubjects.delete(owner!.runner) : RunnerSubjects.deleteAny,
      undefined,
      { headers: request, timeout: timeoutMs },
    );
    return reply.json<{ ok: boolean }>().ok;
  } catch {
    return false;
  }
}
