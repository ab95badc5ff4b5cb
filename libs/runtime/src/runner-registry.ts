import { Kvm, type KV } from '@nats-io/kv';
import type { ConversationRef } from '@flotilla/log';
import type { NatsConnection } from '@nats-io/transport-node';

export const DEFAULT_RUNNERS_BUCKET = 'flotilla_runners';
export const DEFAULT_WORKSPACES_BUCKET = 'flotilla_workspaces';

export type RunnerRegistryOptions = {
  readonly runnersBucket?: string;
  readonly workspacesBucket?: string;
  /** A runner whose heartbeat is older than this is dead. Default 10 s. */
  readonly livenessMs?: number;
  readonly replicas?: number;
};

export type WorkspaceOwner = { readonly runner: string; readonly revision: number };

/**
 * Tool-runner liveness (a heartbeat key per runner in a bucket whose entries expire) and
 * workspace ownership (which runner owns which conversation's workspace, updated with CAS).
 */
export class RunnerRegistry {
  private constructor(
    private readonly runners: KV,
    private readonly workspaces: KV,
    readonly livenessMs: number,
  ) {}

  static async open(nc: NatsConnection, options: RunnerRegistryOptions = {}): Promise<RunnerRegistry> {
    const kvm = new Kvm(nc);
    const livenessMs = options.livenessMs ?? 10_000;
    const runners = await kvm.create(options.runnersBucket ?? DEFAULT_RUNNERS_BUCKET, { history: 1, ttl: livenessMs, replicas: options.replicas ?? 1 });
    const workspaces = await kvm.create(options.workspacesBucket ?? DEFAULT_WORKSPACES_BUCKET, { history: 1, replicas: options.replicas ?? 1 });
    return new RunnerRegistry(runners, workspaces, livenessMs);
  }

  async heartbeat(runner: string): Promise<void> {
    await this.runners.put(runner, JSON.stringify({ at: Date.now() }));
  }

  /** Is the runner alive? (a heartbeat newer than the liveness window) */
  async isAlive(runner: string): Promise<boolean> {
    const entry = await this.runners.get(runner);
    if (!entry || entry.operation !== 'PUT') return false;
    try {
      const { at } = entry.json<{ at: number }>();
      return Date.now() - at < this.livenessMs;
    } catch {
      return false;
    }
  }

  async retire(runner: string): Promise<void> {
    await this.runners.delete(runner).catch(() => undefined);
  }

  async owner(ref: ConversationRef): Promise<WorkspaceOwner | undefined> {
    const entry = await this.workspaces.get(key(ref));
    if (!entry || entry.operation !== 'PUT') return entry ? { runner: '', revision: entry.revision } : undefined;
    return { runner: entry.string(), revision: entry.revision };
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
