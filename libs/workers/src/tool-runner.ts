import { chmod, mkdir, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { whileUnavailable } from '@flotilla/bus';
import {
  actionPaths,
  DelegationFold,
  executeActions,
  HooksConfig,
  interruptedDrafts,
  prepareDrafts,
  readAgentSpec,
  withToolHooks,
  type AroundAction,
  type PrepareNeeds,
  readWorkspaceContext,
  SkillsFold,
  SpecFold,
  unlistedServers,
  type AgentSpec,
  withPathRules,
  workspaceRelative,
  type NextWork,
} from '@flotilla/agent';
import {
  draftEvent,
  withPositionalIds,
  type ActionEvent as LoggedAction,
  type Event,
  type EventDraft,
  type McpToolsEvent,
} from '@flotilla/events';
import { appendSurely, assertConversationRef, isConflict, type ConversationRef, type EventLog } from '@flotilla/log';
import {
  answerWorkspace,
  parseWorkspaceRequest,
  RunnerHeader,
  RunnerSubjects,
  setRecent,
  type CachedConversation,
  type CommitHandler,
  type ConversationCache,
  type InterruptRegistry,
  type Logger,
  type RunnerRegistry,
  type ServiceMetrics,
} from '@flotilla/runtime';
import { formatBytes, RestartReason, workspaceUsage, type Sandbox, type SandboxPool } from '@flotilla/sandbox';
import { createToolContext, openWorkspace, type ToolRegistry, type Workspace } from '@flotilla/tools';
import { headers, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { inSpan, markFailed, tracingEnabled, TRACEPARENT_HEADER } from '@flotilla/tracing';
import { isOutcome, isStillTail, loadDelivered, NOT_TAIL } from './at-tail.js';
import { commitSpan } from './commit-span.js';
import { runHook } from './hook-runner.js';
import { McpSessions } from './mcp-sessions.js';
import { IncrementalFold, incrementalProgress } from './incremental-fold.js';
import {
  WorkspaceFiles,
  type OpenedWorkspace,
  type WorkspaceAccess,
  type WorkspaceFilesOptions,
} from './workspace-files.js';

export type ToolRunnerDependencies = {
  readonly runnerId: string;
  readonly log: EventLog;
  readonly cache: ConversationCache;
  readonly tools: ToolRegistry;
  readonly runners: RunnerRegistry;
  readonly interrupts: InterruptRegistry;
  readonly nc: NatsConnection;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /** Workspaces live in `<workspaceRoot>/<tenant>/<conversation>`. */
  readonly workspaceRoot: string;
  /** The service's own files of each conversation (terminal FIFOs, saved outputs, task list) live in `<privateRoot>/<tenant>/<conversation>`. */
  readonly privateRoot: string;
  /** Each conversation's sandbox: everything the agent runs runs in it. */
  readonly sandboxes: SandboxPool;
  /** The values each conversation's sandbox gets (its secrets); absent where secrets are not configured. */
  readonly secrets?: { reveal(ref: ConversationRef): Promise<Record<string, string>> };
  /** Replaces the values of `secrets` in text by their masks. */
  readonly mask?: (text: string, secrets: Readonly<Record<string, string>>) => string;
  /** The workspace's size quota. */
  readonly workspaceQuotaBytes?: number;
  /** Which secrets' values occur in bytes read in parts: a file holding one is not handed out (it cannot be masked byte for byte). */
  readonly scanSecrets?: WorkspaceFilesOptions['scan'];
  /** How long to wait for the owning runner to take forwarded work. */
  readonly forwardTimeoutMs?: number;
};

export const WORKSPACE_MOVED_NOTE =
  "[Note: this conversation's workspace moved to another tool runner because the previous one stopped. " +
  'Files are intact, but the terminal session was restarted: environment variables, the working directory ' +
  'and background processes from before are gone.]';

export const WORKSPACE_REBUILT_NOTE =
  "[Note: this conversation's workspace moved to another tool runner because the previous one stopped, and its " +
  'files were not reachable from here: the workspace was rebuilt empty, and the terminal session was restarted. ' +
  'Recreate what you need before continuing.]';

export const SANDBOX_RESTARTED_NOTES: Readonly<Record<RestartReason, string>> = {
  [RestartReason.Idle]:
    "[Note: this conversation's sandbox was stopped after a while without commands and started again. Files are intact, but the " +
    'terminal session was restarted: environment variables, the working directory and background processes from before are gone.]',
  [RestartReason.Environment]:
    "[Note: this conversation's secrets changed, so its sandbox was started again with them. Files are intact, but the terminal " +
    'session was restarted: environment variables, the working directory and background processes from before are gone.]',
};

const key = (ref: ConversationRef): string => `${ref.tenant}.${ref.conversation}`;

/** Workspaces kept open (a resolved root and a few paths each), and ownerships remembered: well above the live conversations one runner serves. */
/** The workspaces' folder and each tenant's: traversable by the sandbox user, listable by no other user. */
const WORKSPACE_PARENTS_MODE = 0o711;
/** A workspace: its owner's alone (the sandbox user's, once its sandbox opens). */
const WORKSPACE_MODE = 0o700;
const MAX_OPEN_WORKSPACES = 100_000;
const MAX_REMEMBERED_OWNERSHIPS = 100_000;
/** How long a batch's observations are tried again through transient failures (a nats-server restart, an election) before they are given up (the actions are then answered as interrupted). */
const RESULTS_RETRY_MS = 100_000;
/** Conflicting appends of a batch's observations before they are given up. */
const MAX_RESULT_CONFLICTS = 200;

/**
 * A tool runner: owns conversations' workspaces (ownership in KV, heartbeat), runs each action
 * at most once (execution_started is appended before anything runs), and appends one commit of
 * observations per batch. Wake-ups for a workspace owned by another live runner are forwarded
 * to it; a dead owner's workspace is taken over.
 */
export class ToolRunner {
  readonly #deps: ToolRunnerDependencies;
  /** Conversations whose actions this process is executing right now. */
  readonly #executing = new Map<string, Promise<void>>();
  /** As of when this runner knows it owns a conversation's workspace (the start of the claim, or of the KV read, that showed it). */
  readonly #owned = new Map<string, number>();
  /** This runner's heartbeats: the time the last stored one carries, and since when they have come without a gap (see #ownsRecently). */
  readonly #beats = { lastAt: 0, unbrokenSince: Number.POSITIVE_INFINITY };
  /** Workspaces another live runner owns (forwarded to it), and until when its heartbeat says it is alive. */
  readonly #peerOwners = new Map<string, { readonly runner: string; readonly until: number }>();
  /** Opened workspaces, most recently used last. */
  readonly #workspaces = new Map<string, Workspace>();
  /** What each cached conversation owes, extended as the cache grows (no rescans per delivery). */
  readonly #progress = incrementalProgress();
  /** Each cached conversation's workspace context and the path rules it was shown. */
  readonly #skills = new IncrementalFold(
    () => new SkillsFold(),
    (fold, events) => fold.append(events),
  );
  /** Each cached conversation's link to its parent, when it is a sub-agent's: whose workspace it works in. */
  readonly #delegations = new IncrementalFold(
    () => new DelegationFold(),
    (fold, events) => fold.append(events),
  );
  /** Each cached conversation's agent spec in force and what its MCP servers listed. */
  readonly #specs = new IncrementalFold(
    () => new SpecFold(),
    (fold, events) => fold.append(events),
  );
  /** The MCP servers of the conversations this runner owns. */
  readonly #mcp: McpSessions;
  /** Why a conversation's sandbox was restarted, when a listing of its MCP servers (or a workspace request) used it first: its next batch says so. */
  readonly #restartNotes = new Map<string, RestartReason>();
  /**
   * Workspaces this runner took over from a dead owner to answer a workspace request: the next
   * batch tells the agent, as a take-over by a batch does (whether the files were there then).
   */
  readonly #untoldTakeOvers = new Map<string, boolean>();
  /** The gateway's requests about workspaces this runner owns (files, git). */
  readonly #files: WorkspaceFiles;
  #heartbeat: NodeJS.Timeout | undefined;
  readonly #subscriptions: Subscription[] = [];

  constructor(deps: ToolRunnerDependencies) {
    this.#deps = deps;
    this.#mcp = new McpSessions({ builtins: deps.tools, logger: deps.logger });
    const access: WorkspaceAccess = {
      use: (ref, task) => this.#useWorkspace(ref, task),
      privateDir: (ref) => join(deps.privateRoot, ref.tenant, ref.conversation),
    };
    this.#files = new WorkspaceFiles(access, {
      nc: deps.nc,
      logger: deps.logger,
      ...(deps.mask ? { mask: deps.mask } : {}),
      ...(deps.scanSecrets ? { scan: deps.scanSecrets } : {}),
      ...(deps.workspaceQuotaBytes === undefined ? {} : { workspaceQuotaBytes: deps.workspaceQuotaBytes }),
    });
  }

  get wakeSubject(): string {
    return RunnerSubjects.wake(this.#deps.runnerId);
  }

  async start(heartbeatMs = Math.max(250, Math.floor(this.#deps.runners.livenessMs / 4))): Promise<void> {
    // traversed by the sandbox user on the way to its workspace, listed by nobody else (an older version made it 0755)
    await mkdir(this.#deps.workspaceRoot, { recursive: true, mode: WORKSPACE_PARENTS_MODE });
    await chmod(this.#deps.workspaceRoot, WORKSPACE_PARENTS_MODE);
    // the first heartbeat may meet a bucket whose leader is still being elected (a cluster starting)
    await whileUnavailable(() => this.#beat(), {
      onRetry: (error, attempt) => this.#deps.logger.warn({ err: error, attempt }, 'first heartbeat failed; retrying'),
    });
    this.#heartbeat = setInterval(() => {
      this.#beat().catch((error: unknown) => this.#deps.logger.warn({ err: error }, 'heartbeat failed'));
    }, heartbeatMs);
    const answer =
      <T>(parse: (message: Msg) => T | string, act: (request: T) => Promise<void>) =>
      (_error: unknown, message: Msg) => {
        const request = parse(message);
        if (typeof request === 'string') {
          message.respond(JSON.stringify({ ok: false, error: `bad request: ${request}` }));
          return;
        }
        act(request).then(
          () => message.respond(JSON.stringify({ ok: true })),
          (error: unknown) => message.respond(JSON.stringify({ ok: false, error: (error as Error).message })),
        );
      };
    const { nc, runnerId } = this.#deps;
    this.#subscriptions.push(
      nc.subscribe(this.wakeSubject, {
        callback: answer(parseForward, (forwarded) => this.#executeForwarded(forwarded)),
      }),
      nc.subscribe(RunnerSubjects.delete(runnerId), { callback: answer(parseRef, (ref) => this.deleteWorkspace(ref)) }),
      nc.subscribe(RunnerSubjects.deleteAny, {
        queue: RunnerSubjects.deleteQueue,
        callback: answer(parseRef, (ref) => this.deleteWorkspace(ref)),
      }),
      nc.subscribe(RunnerSubjects.workspace(runnerId), {
        callback: (_error, message) => this.#answerWorkspace(message),
      }),
      nc.subscribe(RunnerSubjects.workspaceAny, {
        queue: RunnerSubjects.deleteQueue,
        callback: (_error, message) => this.#answerWorkspace(message),
      }),
    );
  }

  /** A workspace request of the gateway's: answered when this runner owns the workspace (claimed when no live runner does), else `moved`. */
  #answerWorkspace(message: Msg): void {
    const { runnerId, logger } = this.#deps;
    const request = parseWorkspaceRequest(message);
    if (typeof request === 'string')
      return answerWorkspace(message, runnerId, { code: 'invalid_request', message: request });
    const { ref } = request;
    const answered = async (): Promise<void> => {
      const owned = await this.#ownForRequest(ref);
      // the owner, when this runner knows it, is asked next (a sub-agent's shared workspace is owned as its parent's)
      if (owned !== true)
        return answerWorkspace(message, runnerId, {
          code: 'moved',
          message: 'another tool runner owns this workspace',
          ...(owned.owner ? { owner: owned.owner } : {}),
        });
      answerWorkspace(message, runnerId, await this.#files.handle(request));
    };
    answered().catch((error: unknown) => {
      logger.warn(
        { err: error, conversation: ref.conversation, tenant: ref.tenant, op: request.op.op },
        'a workspace request failed',
      );
      answerWorkspace(message, runnerId, {
        code: 'unavailable',
        message: `The tool runner could not do it: ${(error as Error).message}`,
      });
    });
  }

  /**
   * Whether this runner owns the workspace for a request, claiming it when no live runner does
   * (the conversation has run no tool yet, or its owner died): a user may upload before the first
   * run. A workspace taken from a dead owner is noted, for the next batch to tell the agent. When
   * another live runner owns it, says which (when known: a lost claim race says nothing).
   */
  async #ownForRequest(ref: ConversationRef): Promise<true | { readonly owner: string | undefined }> {
    // a sub-agent's shared workspace is its parent's: owned, and held, as the parent's
    const home = this.#home(ref, (await this.#deps.cache.load(ref)).events);
    if (this.#ownsRecently(home)) return true;
    const { runners, runnerId } = this.#deps;
    const asked = Date.now();
    const owner = await runners.owner(home);
    if (owner?.runner === runnerId) {
      this.#confirmOwned(home, asked);
      return true;
    }
    if (owner?.runner && (await runners.isAlive(owner.runner))) return { owner: owner.runner };
    const existed = await stat(join(this.#deps.workspaceRoot, home.tenant, home.conversation)).then(
      () => true,
      () => false,
    );
    if (!(await runners.claim(home, runnerId, owner))) return { owner: undefined };
    this.#confirmOwned(home, asked);
    if (owner !== undefined && owner.runner !== '') {
      this.#untoldTakeOvers.set(key(ref), existed);
      this.#deps.logger.info(
        { conversation: ref.conversation, tenant: ref.tenant, previousOwner: owner.runner },
        'took over the workspace for a workspace request',
      );
    }
    return true;
  }

  /** The conversation's workspace, sandbox and secrets as its batches have them (the same sandbox environment: the spec's model key left out). */
  async #useWorkspace<T>(ref: ConversationRef, task: (opened: OpenedWorkspace) => Promise<T>): Promise<T> {
    const conversation = await this.#deps.cache.load(ref);
    const { root } = await this.#workspaceDirectory(ref, this.#home(ref, conversation.events), false);
    const revealed = await this.#secrets(ref, this.#inForce(conversation.events).modelKey);
    const privateDir = join(this.#deps.privateRoot, ref.tenant, ref.conversation);
    return await this.#deps.sandboxes.use(
      { id: key(ref), workspace: root, privateDir, env: revealed.sandbox },
      async ({ sandbox, restarted }) => {
        if (restarted) this.#restartNotes.set(key(ref), restarted);
        // a request may write (an upload): the workspace's filesystem, where it gets one, is made first
        await sandbox.prepareWorkspace?.();
        const workspace =
          this.#workspaces.get(key(ref)) ??
          (await openWorkspace(root, {
            shownRoot: sandbox.workspacePath,
            owner: sandbox.owner,
            readOnly: { root: sandbox.privateDir, shownRoot: sandbox.toInside(sandbox.privateDir) },
          }));
        setRecent(this.#workspaces, key(ref), workspace, MAX_OPEN_WORKSPACES);
        return await task({ workspace, sandbox, secrets: revealed.all });
      },
    );
  }

  /**
   * The conversation was deleted: its shell and sandbox stop, its workspace and ownership entry
   * are removed. A batch running for it finishes first (it cannot be appended to a purged log).
   */
  async deleteWorkspace(ref: ConversationRef): Promise<void> {
    // a sub-agent's shared workspace is its parent's: only what is its own goes (asked before its log is purged)
    const home = this.#home(ref, (await this.#deps.cache.load(ref)).events);
    await this.#executing.get(key(ref))?.catch(() => undefined);
    await this.#deps.tools.closeConversation(key(ref));
    await this.#mcp.close(key(ref));
    await this.#deps.sandboxes.remove(key(ref));
    this.#restartNotes.delete(key(ref));
    this.#untoldTakeOvers.delete(key(ref));
    this.#workspaces.delete(key(ref));
    this.#owned.delete(key(ref));
    this.#deps.cache.forget(ref);
    await rm(join(this.#deps.privateRoot, ref.tenant, ref.conversation), { recursive: true, force: true });
    if (home.conversation !== ref.conversation) return;
    const root = join(this.#deps.workspaceRoot, ref.tenant, ref.conversation);
    // a workspace of its own filesystem is unmounted first (its image goes too), or rm would stop at its mount point
    await this.#deps.sandboxes.releaseWorkspace(root);
    await rm(root, { recursive: true, force: true });
    await this.#deps.runners.release(ref);
  }

  /** The conversation whose workspace a conversation's tools act in: itself, or a sub-agent's parent's (its subagent_task says). */
  #home(ref: ConversationRef, events: readonly Event[]): ConversationRef {
    const workspace = this.#delegations.of(events).workspace(ref.conversation);
    return workspace === ref.conversation ? ref : { tenant: ref.tenant, conversation: workspace };
  }

  async stop(): Promise<void> {
    clearInterval(this.#heartbeat);
    for (const subscription of this.#subscriptions) subscription.unsubscribe();
    await Promise.allSettled([...this.#executing.values()]);
    await this.#mcp.closeAll();
    await this.#deps.runners.retire(this.#deps.runnerId);
  }

  handler(): CommitHandler {
    return async (delivery) => {
      const loaded = await loadDelivered(delivery, this.#deps.log, this.#deps.cache);
      if (isOutcome(loaded)) return loaded;
      const { ref, conversation } = loaded;
      const work = await this.#decide(conversation.events, this.#executing.has(key(ref)));
      if (work.kind === 'in_progress') {
        if (!(await isStillTail(delivery, ref, this.#deps.log, this.#deps.cache.tails, conversation.tail.streamSeq)))
          return NOT_TAIL;
        // Someone (maybe us) is running these. Never ack on a liveness judgement: the runner may
        // die before it appends, so look again later until the results are in the log.
        return { ack: false, outcome: 'in_progress', delayMs: Math.ceil(this.#deps.runners.livenessMs / 2) };
      }
      // the workspace's context is read by its owner, as its actions are run; so are its MCP servers listed, before the step that may use them
      if (work.kind !== 'execute' && work.kind !== 'prepare' && this.#mcpOwed(work, conversation.events) === undefined)
        return { ack: true, outcome: 'nothing_to_run' };

      // the workspace's owner runs the batch (a sub-agent's shared workspace: its parent's)
      const home = this.#home(ref, conversation.events);
      if (this.#ownsRecently(home)) {
        await inSpan('tool_batch', commitSpan(delivery, ref), () =>
          this.#executeFor(ref, false, delivery.signal, conversation),
        );
        return { ack: true, outcome: 'executed' };
      }
      // another live runner that owns it, remembered while its heartbeat says alive, else read
      const remembered = this.#peerOwner(home);
      const asked = Date.now();
      const owner = remembered === undefined ? await this.#deps.runners.owner(home) : undefined;
      const peer =
        remembered ??
        (owner?.runner && owner.runner !== this.#deps.runnerId && (await this.#rememberPeer(home, owner.runner))
          ? owner.runner
          : undefined);
      if (peer !== undefined) {
        // The owner answers once the batch is appended; if it takes longer, or dies, look again later.
        try {
          const forward = headers();
          forward.set(RunnerHeader.Tenant, ref.tenant);
          forward.set(RunnerHeader.Conversation, ref.conversation);
          forward.set(RunnerHeader.StreamSeq, String(delivery.streamSeq));
          const traceparent = delivery.header(TRACEPARENT_HEADER);
          if (traceparent) forward.set(TRACEPARENT_HEADER, traceparent);
          const reply = await this.#deps.nc.request(RunnerSubjects.wake(peer), delivery.message.data, {
            headers: forward,
            timeout: this.#deps.forwardTimeoutMs ?? this.#deps.runners.livenessMs * 2,
          });
          const answer = reply.json<{ ok: boolean; error?: string }>();
          return answer.ok
            ? { ack: true, outcome: 'forwarded' }
            : { ack: false, outcome: 'forward_failed', delayMs: 1_000 };
        } catch {
          // unanswered: it may have stopped; the next delivery reads who owns the workspace again
          this.#peerOwners.delete(key(home));
          this.#deps.runners.forget(peer);
          return { ack: false, outcome: 'forward_pending', delayMs: Math.ceil(this.#deps.runners.livenessMs / 2) };
        }
      }
      const tookOver = owner !== undefined && owner.runner !== '' && owner.runner !== this.#deps.runnerId;
      if (
        owner?.runner !== this.#deps.runnerId &&
        !(await this.#deps.runners.claim(home, this.#deps.runnerId, owner))
      ) {
        return { ack: false, outcome: 'claim_lost', delayMs: 200 };
      }
      this.#confirmOwned(home, asked);
      if (tookOver) delivery.logger.info({ previousOwner: owner?.runner }, 'took over the workspace');
      await inSpan('tool_batch', commitSpan(delivery, ref, { 'flotilla.took_over': tookOver }), () =>
        this.#executeFor(ref, tookOver, delivery.signal, conversation),
      );
      return { ack: true, outcome: 'executed' };
    };
  }

  /**
   * nextWork with the liveness of every runner that started an unanswered action. `selfBusy` says
   * whether this process is running the conversation's batch now: if not, our own started and
   * unanswered actions are leftovers of a failed attempt, i.e. interrupted.
   */
  async #decide(events: readonly Event[], selfBusy: boolean): Promise<NextWork> {
    const progress = this.#progress.of(events);
    const alive = new Map<string, boolean>();
    for (const runner of progress.startedByRunners()) {
      alive.set(
        runner,
        runner === this.#deps.runnerId ? selfBusy : (await this.#deps.runners.aliveUntil(runner)) !== undefined,
      );
    }
    return progress.nextWork({ runnerAlive: (runner) => alive.get(runner) ?? false });
  }

  /**
   * A wake-up forwarded by another runner, with the commit it was delivered: when that commit
   * directly follows what the cache holds, the batch starts without reading the log.
   */
  #executeForwarded(forwarded: Forwarded): Promise<void> {
    const attributes = {
      'flotilla.tenant': forwarded.ref.tenant,
      'flotilla.conversation': forwarded.ref.conversation,
      'flotilla.stream_seq': forwarded.streamSeq,
      'flotilla.forwarded': true,
    };
    return inSpan('tool_batch', { parent: forwarded.traceparent ?? '', attributes }, () =>
      this.#runForwarded(forwarded),
    );
  }

  async #runForwarded(forwarded: Forwarded): Promise<void> {
    const { ref, streamSeq, data } = forwarded;
    const cached = this.#deps.cache.peek(ref);
    // Forwarded here because another runner read that this one owns the workspace, at a time this
    // runner does not know: its ownership is not noted from that (its own deliveries read it once).
    if (!cached || cached.tail.streamSeq >= streamSeq || this.#executing.has(key(ref)))
      return this.#executeFor(ref, false);
    const loaded = await this.#deps.cache.load(ref, streamSeq, {
      subject: this.#deps.log.filter(ref),
      seq: streamSeq,
      data,
    });
    return this.#executeFor(ref, false, undefined, loaded);
  }

  /**
   * The other runner that owns the workspace, as read while its heartbeat still says it is alive:
   * no runner takes a workspace over before its owner's last heartbeat is a whole window old, so
   * until then a read of the owner could only find the same runner (or none, once deleted).
   */
  #peerOwner(ref: ConversationRef): string | undefined {
    const peer = this.#peerOwners.get(key(ref));
    if (peer === undefined) return undefined;
    if (Date.now() < peer.until) return peer.runner;
    this.#peerOwners.delete(key(ref));
    return undefined;
  }

  /** Remembers `runner` as the workspace's owner when its heartbeat says it is alive; false when not. */
  async #rememberPeer(ref: ConversationRef, runner: string): Promise<boolean> {
    const until = await this.#deps.runners.aliveUntil(runner);
    if (until === undefined) return false;
    setRecent(this.#peerOwners, key(ref), { runner, until }, MAX_REMEMBERED_OWNERSHIPS);
    return true;
  }

  /** Notes that the workspace was this runner's as of `asOf`, the time the read or claim that showed it began. */
  #confirmOwned(ref: ConversationRef, asOf: number): void {
    setRecent(this.#owned, key(ref), asOf, MAX_REMEMBERED_OWNERSHIPS);
  }

  /** Writes this runner's heartbeat and notes when it landed (see #ownsRecently). */
  async #beat(): Promise<void> {
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
  #ownsRecently(ref: ConversationRef): boolean {
    const confirmedAt = this.#owned.get(key(ref));
    if (confirmedAt === undefined) return false;
    if (confirmedAt >= this.#beats.unbrokenSince && Date.now() - this.#beats.lastAt < this.#deps.runners.livenessMs / 2)
      return true;
    this.#owned.delete(key(ref));
    return false;
  }

  /** Runs whatever the conversation's log says is due, one batch at a time; serialised per conversation. */
  async #executeFor(
    ref: ConversationRef,
    tookOver: boolean,
    signal?: AbortSignal,
    loaded?: CachedConversation,
  ): Promise<void> {
    // Chain after any batch already running here, then look at the log again: work that arrived
    // while it ran is never assumed done.
    const previous = this.#executing.get(key(ref));
    const job = previous
      ? previous.catch(() => undefined).then(() => this.#runBatches(ref, tookOver, signal))
      : this.#runBatches(ref, tookOver, signal, loaded);
    this.#executing.set(key(ref), job);
    try {
      await job;
    } finally {
      if (this.#executing.get(key(ref)) === job) this.#executing.delete(key(ref));
    }
  }

  /**
   * `loaded`: the conversation as the caller just loaded it at the tail (else it is read). After
   * an append of ours the cache holds the log as of that append: a later commit is delivered and
   * handled on its own, and an append that meets one conflicts and reads the log again.
   */
  async #runBatches(
    ref: ConversationRef,
    tookOver: boolean,
    signal?: AbortSignal,
    loaded?: CachedConversation,
  ): Promise<void> {
    let note = tookOver;
    let known = loaded;
    for (let round = 0; round < 50; round += 1) {
      if (signal?.aborted) return;
      const conversation = known ?? (await this.#deps.cache.load(ref));
      known = undefined;
      const work = await this.#decide(conversation.events, false);
      const owed = this.#mcpOwed(work, conversation.events);
      if (owed) {
        known = await this.#listMcpServers(ref, conversation, owed);
        continue;
      }
      if (work.kind === 'prepare') {
        known = await this.#prepare(ref, conversation, work.needs);
        continue;
      }
      if (work.kind !== 'execute') return;
      const context = { ...ref, source: 'system' as const };
      const drafts: EventDraft[] = interruptedDrafts(work.interrupted, context);
      if (work.actions.length > 0) {
        drafts.push(
          draftEvent(context, 'execution_started', {
            action_ids: work.actions.map((action) => action.id),
            runner: this.#deps.runnerId,
          }),
        );
      }
      let started;
      try {
        // an append whose answer was lost is tried again until its outcome is known: thrown here
        // instead, a redelivery would find the start recorded and answer the actions as interrupted,
        // though none of them ran
        started = await appendSurely(this.#deps.log, ref, withPositionalIds(drafts, conversation.tail.lastSeq + 1), {
          expected: conversation.tail,
        });
      } catch (error) {
        if (isConflict(error)) continue;
        throw error;
      }
      this.#deps.cache.appended(ref, conversation.tail, started.events, {
        streamSeq: started.streamSeq,
        lastSeq: started.lastSeq,
      });
      known = this.#deps.cache.peek(ref);
      if (known?.tail.streamSeq !== started.streamSeq) known = undefined;
      if (work.actions.length === 0) continue;
      const observations = await this.#run(ref, work.actions, note, this.#inForce(conversation.events, ref));
      note = false;
      known = await this.#appendResults(ref, observations);
    }
  }

  /**
   * Answers a `prepare`: reads what the workspace says (its repository context, skills and path
   * rules) and runs the hooks owed (in the sandbox), into the log in one commit, for the step that
   * waits for it. Returns the conversation as the append left it, if the cache
   * holds just that; undefined (read the log again) after a conflict: another commit landed first.
   */
  async #prepare(
    ref: ConversationRef,
    conversation: CachedConversation,
    needs: PrepareNeeds,
  ): Promise<CachedConversation | undefined> {
    const { root } = await this.#workspaceDirectory(ref, this.#home(ref, conversation.events), false);
    const hooks = this.#hooksInForce(conversation.events);
    const hooksOwed = needs.sessionStart || needs.prompts.length > 0 || needs.stop || needs.sessionEnd;
    const answer = async (
      sandbox: Sandbox | undefined,
      secrets: Readonly<Record<string, string>>,
    ): Promise<EventDraft[]> => {
      const workspace = this.#workspaces.get(key(ref)) ?? (await openWorkspace(root));
      const drafts = await prepareDrafts({
        needs,
        events: conversation.events,
        hooks: hooks ?? HooksConfig.parse({}),
        ref,
        readContext: () => readWorkspaceContext(workspace),
        run: (hook, input) => runHook(hook, input, sandbox),
      });
      // a hook's output leaves this runner as any tool's does: host paths as the agent sees them, no secret's value
      const present = (text: string): string =>
        this.#deps.mask ? this.#deps.mask(workspace.show(text), secrets) : workspace.show(text);
      return drafts.map((draft) => presentDraft(draft, present));
    };
    let drafts: EventDraft[];
    if (!hooksOwed) drafts = await answer(undefined, {});
    else {
      // hooks run in the conversation's sandbox, with its secrets in their environment as its commands have
      const secrets = await this.#secrets(ref, this.#inForce(conversation.events).modelKey);
      const privateDir = join(this.#deps.privateRoot, ref.tenant, ref.conversation);
      drafts = await this.#deps.sandboxes.use(
        { id: key(ref), workspace: root, privateDir, env: secrets.sandbox },
        ({ sandbox }) => answer(sandbox, secrets.all),
      );
    }
    if (drafts.length === 0) return undefined;
    return await this.#appendAtTail(ref, conversation, drafts);
  }

  /** The spec in force, when it is readable (a spec this build cannot read ends the run at the step worker). */
  #specInForce(events: readonly Event[]): AgentSpec | undefined {
    const event = this.#specs.of(events).event();
    const read = event === undefined ? undefined : readAgentSpec(event);
    return read?.ok ? read.spec : undefined;
  }

  /** The hooks of the spec in force, when it has a readable spec. */
  #hooksInForce(events: readonly Event[]): HooksConfig | undefined {
    return this.#specInForce(events)?.hooks;
  }

  /** What a batch of actions runs with, from the log: its skills, the spec's MCP servers and hooks, the secret that is its model's key. */
  #inForce(events: readonly Event[], ref?: ConversationRef): InForce {
    const modelKey = this.#specInForce(events)?.llm.apiKeySecret;
    return {
      skills: this.#skills.of(events),
      mcp: this.#mcpInForce(events),
      hooks: this.#hooksInForce(events),
      ...(modelKey ? { modelKey } : {}),
      ...(ref ? { home: this.#home(ref, events) } : {}),
    };
  }

  /**
   * The conversation's secrets: all of them (what is masked in what leaves this runner), and those
   * its sandbox gets: all but the one the spec's model key is — the model's key is for the step
   * workers, and the agent's commands have no use for it.
   */
  async #secrets(
    ref: ConversationRef,
    modelKey: string | undefined,
  ): Promise<{ readonly all: Record<string, string>; readonly sandbox: Record<string, string> }> {
    const all = (await this.#deps.secrets?.reveal(ref)) ?? {};
    if (modelKey === undefined || !(modelKey in all)) return { all, sandbox: all };
    const { [modelKey]: _key, ...sandbox } = all;
    return { all, sandbox };
  }

  /** The spec in force and what its MCP servers listed, when the spec names MCP servers. */
  #mcpInForce(events: readonly Event[]): McpInForce | undefined {
    const fold = this.#specs.of(events);
    const event = fold.event();
    if (event === undefined) return undefined;
    // a spec this build cannot read ends the run at the step worker, saying why; nothing is started for it
    const read = readAgentSpec(event);
    if (!read.ok || read.spec.mcpServers.length === 0) return undefined;
    return { spec: read.spec, specSeq: event.seq, listed: fold.listed() };
  }

  /**
   * The spec's MCP servers whose listing the log does not have yet, when a step is due: the owner
   * of the workspace lists them first (the step waits for it), at the first use of the spec, so
   * the secrets set before the run are there.
   */
  #mcpOwed(work: NextWork, events: readonly Event[]): McpOwed | undefined {
    if (work.kind !== 'step') return undefined;
    const mcp = this.#mcpInForce(events);
    const servers = mcp === undefined ? [] : unlistedServers(mcp.spec, mcp.listed);
    return mcp && servers.length > 0 ? { ...mcp, servers } : undefined;
  }

  /**
   * Starts the spec's MCP servers that have not listed (stdio ones in the conversation's sandbox)
   * and appends what each offers, or why it offers nothing, as one mcp_tools event per server, in
   * one commit. Returns the conversation as the append left it, if the cache holds just that;
   * undefined (read the log again) after a conflict.
   */
  async #listMcpServers(
    ref: ConversationRef,
    conversation: CachedConversation,
    owed: McpOwed,
  ): Promise<CachedConversation | undefined> {
    const { root } = await this.#workspaceDirectory(ref, this.#home(ref, conversation.events), false);
    const revealed = await this.#secrets(ref, this.#inForce(conversation.events).modelKey);
    const secrets = revealed.all;
    const privateDir = join(this.#deps.privateRoot, ref.tenant, ref.conversation);
    const drafts = await this.#deps.sandboxes.use(
      { id: key(ref), workspace: root, privateDir, env: revealed.sandbox },
      async ({ sandbox, restarted }) => {
        if (restarted) this.#restartNotes.set(key(ref), restarted);
        const listings = await this.#mcp.list({ id: key(ref), spec: owed.spec, sandbox, secrets }, owed.servers);
        // what leaves this runner shows no host path and no secret's value, whatever a server printed
        const present = (text: string): string => {
          const shown = text.replaceAll(root, sandbox.workspacePath);
          return this.#deps.mask ? this.#deps.mask(shown, secrets) : shown;
        };
        return listings.map((listing) => {
          return draftEvent(
            { ...ref, source: 'environment' },
            'mcp_tools',
            mapStrings(
              {
                spec_seq: owed.specSeq,
                server: listing.server,
                tools: [...listing.tools],
                ...('error' in listing ? { error: listing.error } : {}),
              },
              present,
            ),
          );
        });
      },
    );
    for (const draft of drafts) {
      if (draft.type === 'mcp_tools' && draft.error)
        this.#deps.logger.warn(
          { conversation: ref.conversation, tenant: ref.tenant, server: draft.server, reason: draft.error.message },
          'an MCP server could not be started or listed',
        );
    }
    return await this.#appendAtTail(ref, conversation, drafts);
  }

  /**
   * Appends `drafts` at the tail `conversation` was read at. Returns the conversation as the append
   * left it, if the cache holds just that; undefined (read the log again) after a conflict: another
   * commit landed first.
   */
  async #appendAtTail(
    ref: ConversationRef,
    conversation: CachedConversation,
    drafts: readonly EventDraft[],
  ): Promise<CachedConversation | undefined> {
    try {
      const commit = await appendSurely(this.#deps.log, ref, withPositionalIds(drafts, conversation.tail.lastSeq + 1), {
        expected: conversation.tail,
      });
      this.#deps.cache.appended(ref, conversation.tail, commit.events, {
        streamSeq: commit.streamSeq,
        lastSeq: commit.lastSeq,
      });
      this.#deps.metrics.appends.inc({ result: 'ok' });
      const known = this.#deps.cache.peek(ref);
      return known?.tail.streamSeq === commit.streamSeq ? known : undefined;
    } catch (error) {
      if (isConflict(error)) return undefined;
      throw error;
    }
  }

  /** The conversation's workspace directory on this host (`home`'s, #home), created when missing; `existed` only when asked. */
  async #workspaceDirectory(
    ref: ConversationRef,
    home: ConversationRef,
    checkExisted: boolean,
  ): Promise<{ root: string; existed: boolean }> {
    const root = join(this.#deps.workspaceRoot, home.tenant, home.conversation);
    const existed = checkExisted
      ? await stat(root).then(
          () => true,
          () => false,
        )
      : true;
    if (checkExisted || !this.#workspaces.has(key(ref))) {
      // the workspaces and each tenant's folder may be traversed (the sandbox user must reach its
      // workspace) but not listed; a workspace is its owner's alone (docs/security.md)
      await mkdir(dirname(root), { recursive: true, mode: WORKSPACE_PARENTS_MODE });
      await mkdir(root, { recursive: true, mode: WORKSPACE_MODE });
      // a tenant's folder an older version made (0755) is closed as its next workspace is made
      if (checkExisted && !existed) await chmod(dirname(root), WORKSPACE_PARENTS_MODE);
    }
    return { root, existed };
  }

  async #run(
    ref: ConversationRef,
    actions: readonly Extract<Event, { type: 'action' }>[],
    note: boolean,
    inForce: InForce,
  ): Promise<EventDraft[]> {
    try {
      return await this.#runInSandbox(ref, actions, note, inForce);
    } catch (error) {
      // the actions were recorded as started: they get an answer, never a silent retry
      this.#deps.logger.error(
        { err: error, conversation: ref.conversation, tenant: ref.tenant },
        'the conversation’s sandbox could not run its actions',
      );
      const reason = `The conversation's sandbox could not run this action: ${(error as Error).message}. It may not have run at all; check before trying again, and tell the user if it keeps failing.`;
      return actions.map((action) =>
        draftEvent({ ...ref, source: 'environment', parent: action.id }, 'observation', {
          action_id: action.id,
          tool_call_id: action.tool_call_id,
          tool_name: action.tool_name,
          content: [{ type: 'text', text: reason }],
          is_error: true,
        }),
      );
    }
  }

  async #runInSandbox(
    ref: ConversationRef,
    actions: readonly Extract<Event, { type: 'action' }>[],
    note: boolean,
    inForce: InForce,
  ): Promise<EventDraft[]> {
    const { skills, mcp, hooks } = inForce;
    // a workspace request took the workspace over since the last batch: told now, as if this batch had
    const untold = this.#untoldTakeOvers.get(key(ref));
    this.#untoldTakeOvers.delete(key(ref));
    const tookOver = note || untold !== undefined;
    const { root, existed: existsNow } = await this.#workspaceDirectory(ref, inForce.home ?? ref, tookOver);
    const existed = untold ?? existsNow;
    const revealed = await this.#secrets(ref, inForce.modelKey);
    const secrets = revealed.all;
    const tracked = this.#deps.interrupts.track(ref);
    const started = performance.now();
    try {
      const privateDir = join(this.#deps.privateRoot, ref.tenant, ref.conversation);
      return await this.#deps.sandboxes.use(
        { id: key(ref), workspace: root, privateDir, env: revealed.sandbox },
        async ({ sandbox, restarted: restartedNow }) => {
          const restarted = restartedNow ?? this.#restartNotes.get(key(ref));
          this.#restartNotes.delete(key(ref));
          let workspace = this.#workspaces.get(key(ref));
          if (!workspace) {
            const readOnly = { root: sandbox.privateDir, shownRoot: sandbox.toInside(sandbox.privateDir) };
            workspace = await openWorkspace(root, { shownRoot: sandbox.workspacePath, owner: sandbox.owner, readOnly });
          }
          setRecent(this.#workspaces, key(ref), workspace, MAX_OPEN_WORKSPACES);
          // read-only tools cannot fill the workspace: a batch of only those needs no filesystem made for it, nor a walk of it after
          const mayWrite = actions.some(
            (action) => this.#deps.tools.get(action.tool_name)?.annotations.readOnly !== true,
          );
          if (mayWrite) await sandbox.prepareWorkspace?.();
          // a workspace of its own filesystem refuses a write past its quota itself: nothing to measure from outside
          const checkedQuota = sandbox.diskLimited ? undefined : this.#deps.workspaceQuotaBytes;
          const toolContext = createToolContext({
            workspace,
            sandbox,
            conversationId: key(ref),
            signal: tracked.signal,
            ...(checkedQuota === undefined ? {} : { workspaceQuotaBytes: checkedQuota }),
            // outputs too long for an observation are saved to the private directory: masked first
            ...(this.#deps.mask && Object.keys(secrets).length > 0
              ? { redact: (text: string) => this.#deps.mask!(text, secrets) }
              : {}),
          });
          // a call of an MCP tool goes through the conversation's server, started first if it is not running
          const calledMcp =
            mcp !== undefined && actions.some((action) => this.#deps.tools.get(action.tool_name) === undefined);
          const registry = calledMcp
            ? await this.#mcp.registry({ id: key(ref), spec: mcp.spec, sandbox, secrets }, mcp.listed)
            : this.#deps.tools;
          // between the spec's PreToolUse and PostToolUse hooks, which run in the same sandbox
          const execute = (allowed: readonly LoggedAction[]) =>
            executeActions(
              allowed,
              registry,
              toolContext,
              { ...ref, source: 'environment' },
              tracingEnabled() ? toolSpan : undefined,
            );
          const executed = hooks
            ? await withToolHooks(actions, hooks, ref, (hook, input) => runHook(hook, input, sandbox), execute)
            : await execute(actions);
          // a nested AGENTS.md joins the first observation of an action touching its folder
          const roots = [workspace.shownRoot, workspace.root];
          const drafts = withPathRules(actions, executed, skills, (action) =>
            actionPaths(action).flatMap((path) => workspaceRelative(path, roots) ?? []),
          );
          this.#deps.metrics.toolSeconds.observe(
            { tool: actions.length === 1 ? actions[0]!.tool_name : 'batch', outcome: 'ok' },
            (performance.now() - started) / 1_000,
          );
          const notes = [
            ...(tookOver ? [existed ? WORKSPACE_MOVED_NOTE : WORKSPACE_REBUILT_NOTE] : []),
            ...(restarted ? [SANDBOX_RESTARTED_NOTES[restarted]] : []),
          ];
          const firstIndex = drafts.findIndex((draft) => draft.type === 'observation');
          const first = drafts[firstIndex];
          if (notes.length > 0 && first?.type === 'observation') {
            drafts[firstIndex] = {
              ...first,
              content: [...notes.map((text) => ({ type: 'text' as const, text })), ...first.content],
            };
          }
          if (mayWrite && checkedQuota !== undefined) await this.#checkQuota(root, drafts);
          // what leaves this runner shows host paths as the agent sees them, and no secret's value
          const present = (text: string): string => {
            const shown = workspace.show(text);
            return this.#deps.mask ? this.#deps.mask(shown, secrets) : shown;
          };
          return drafts.map((draft) => presentDraft(draft, present));
        },
      );
    } finally {
      tracked.done();
    }
  }

  /** A workspace over its quota after a batch: the last observation says so, as an error. */
  async #checkQuota(root: string, drafts: EventDraft[]): Promise<void> {
    const quota = this.#deps.workspaceQuotaBytes;
    if (quota === undefined) return;
    const usage = await workspaceUsage(root, { stopAboveBytes: quota });
    if (usage.bytes <= quota) return;
    const index = drafts.findLastIndex((draft) => draft.type === 'observation');
    const last = drafts[index];
    if (last?.type !== 'observation') return;
    const text = `[The workspace is over its size quota of ${formatBytes(quota)} (at least ${formatBytes(usage.bytes)} used): delete files before writing more; commands that write will be stopped.]`;
    drafts[index] = { ...last, is_error: true, content: [...last.content, { type: 'text', text }] };
  }

  /**
   * Observations must land: a transient failure appends the same commit again (appendSurely), so a
   * lost answer never duplicates it; on a conflict, append again at the new tail. Results for calls
   * that got answered meanwhile (e.g. marked interrupted by a runner that thought we were dead) are
   * dropped, so no call is ever answered twice.
   */
  async #appendResults(ref: ConversationRef, drafts: readonly EventDraft[]): Promise<CachedConversation | undefined> {
    let remaining = drafts;
    const deadline = Date.now() + RESULTS_RETRY_MS;
    for (let conflicts = 0; ; conflicts += 1) {
      // first at the tail our execution_started left (the usual case), then as the log says
      const conversation =
        (conflicts === 0 ? this.#deps.cache.peek(ref) : undefined) ?? (await this.#deps.cache.load(ref));
      const progress = this.#progress.of(conversation.events);
      const unanswered = remaining.filter(
        (draft) => draft.type !== 'observation' || !progress.answered(draft.tool_call_id),
      );
      if (unanswered.length === 0) return undefined;
      if (unanswered.length !== remaining.length) {
        this.#deps.logger.warn(
          { dropped: remaining.length - unanswered.length },
          'results already answered by another runner were dropped',
        );
        remaining = unanswered;
      }
      try {
        const commit = await appendSurely(
          this.#deps.log,
          ref,
          withPositionalIds(remaining, conversation.tail.lastSeq + 1),
          { expected: conversation.tail, deadline },
        );
        this.#deps.cache.appended(ref, conversation.tail, commit.events, {
          streamSeq: commit.streamSeq,
          lastSeq: commit.lastSeq,
        });
        this.#deps.metrics.appends.inc({ result: 'ok' });
        const known = this.#deps.cache.peek(ref);
        return known?.tail.streamSeq === commit.streamSeq ? known : undefined;
      } catch (error) {
        if (!isConflict(error) || conflicts >= MAX_RESULT_CONFLICTS) throw error;
        this.#deps.metrics.appends.inc({ result: 'conflict' });
        await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(5 * (conflicts + 1), 50)));
      }
    }
  }
}

type Forwarded = {
  readonly ref: ConversationRef;
  readonly streamSeq: number;
  readonly data: Uint8Array;
  readonly traceparent?: string;
};

/** What a batch of actions runs with (`#inForce`). */
type InForce = {
  readonly skills: SkillsFold;
  readonly mcp: McpInForce | undefined;
  readonly hooks: HooksConfig | undefined;
  readonly modelKey?: string;
  readonly home?: ConversationRef;
};

/** A spec in force that names MCP servers, where it is, and what its servers listed. */
type McpInForce = { readonly spec: AgentSpec; readonly specSeq: number; readonly listed: readonly McpToolsEvent[] };
/** And the servers of it that have not listed yet. */
type McpOwed = McpInForce & { readonly servers: readonly string[] };

/** The conversation a runner request names in its headers, or why it names none. */
function parseRef(message: Msg): ConversationRef | string {
  const ref = {
    tenant: message.headers?.get(RunnerHeader.Tenant) ?? '',
    conversation: message.headers?.get(RunnerHeader.Conversation) ?? '',
  };
  try {
    assertConversationRef(ref);
  } catch (error) {
    return (error as Error).message;
  }
  return ref;
}

/** One tool call, as a span (a child of its batch's). */
const toolSpan: AroundAction = (action, run) =>
  inSpan(
    `tool ${action.tool_name}`,
    {
      attributes: {
        'flotilla.tool': action.tool_name,
        'flotilla.action_id': action.id,
        'flotilla.tool_call_id': action.tool_call_id,
      },
    },
    async (span) => {
      const result = await run();
      if (result.isError) markFailed(span, 'the tool reported an error');
      return result;
    },
  );

/** The forwarded wake-up (the body is the delivered commit as stored), or why it is not one. The commit is validated when used. */
function parseForward(message: Msg): Forwarded | string {
  const ref = parseRef(message);
  if (typeof ref === 'string') return ref;
  const streamSeq = Number(message.headers?.get(RunnerHeader.StreamSeq));
  if (!Number.isSafeInteger(streamSeq) || streamSeq < 1) return `${RunnerHeader.StreamSeq} must be a positive integer`;
  const traceparent = message.headers?.get(TRACEPARENT_HEADER);
  return { ref, streamSeq, data: message.data, ...(traceparent ? { traceparent } : {}) };
}

/** The draft with `present` applied to what a tool or a hook said: its content, details and error text, a hook's output, reason and added context. */
function presentDraft(draft: EventDraft, present: (text: string) => string): EventDraft {
  const said = Object.fromEntries(
    (['content', 'details', 'error', 'extended_content', 'output', 'reason'] as const)
      .filter((field) => field in draft)
      .map((field) => [field, mapStrings((draft as Record<string, unknown>)[field], present)]),
  );
  return { ...draft, ...said } as EventDraft;
}

/** `value` with `map` applied to every string in it. */
function mapStrings<T>(value: T, map: (text: string) => string): T {
  if (typeof value === 'string') return map(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => mapStrings(item, map)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, mapStrings(item, map)])) as T;
  }
  return value;
}
