import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterNodeConfig } from './cluster-node-config.js';
import { freePorts } from './free-port.js';
import { fetchJsz, findStreams, type Jsz, type JszStream } from './jsz.js';
import { findNatsServerBinary, missingNatsServerHint } from './nats-binary.js';
import { NatsEmbeddedError, NatsEmbeddedErrorCode } from './nats-embedded-error.js';
import { NatsServerProcess } from './nats-server-process.js';
import { pollUntil, type Observation } from './poll-until.js';

export type NatsClusterOptions = {
  /** Number of nodes (default 3). */
  readonly size?: number;
  /** Configuration text appended to every node's file (an `authorization {}` block, `tls {}`, …); not `cluster`, `server_name` or `http`. */
  readonly config?: string;
  /** Path of the nats-server binary; defaults to the one on PATH. */
  readonly binary?: string;
  /** Each line a node logs, with the node's index (0 for n1). */
  readonly onLog?: (node: number, line: string) => void;
  /** Cluster name (default "flotilla"). */
  readonly name?: string;
  /** Where the nodes keep their stores and configuration files, kept after dispose; default a temp dir removed on dispose. */
  readonly dir?: string;
  /** How long `start` and `restart` wait for the nodes to join the JetStream meta group (default 30 s). */
  readonly startTimeoutMs?: number;
};

export type StreamQueryOptions = {
  /** The account (name or id) that holds the stream: `$G` when no accounts are configured. Any account when omitted. */
  readonly account?: string;
};

/** One node's own copy of a stream, as its monitoring endpoint reports it. */
export type StreamReplicaState = {
  readonly messages: number;
  readonly bytes: number;
  readonly firstSeq: number;
  readonly lastSeq: number;
};

type StreamViews = readonly (JszStream | undefined)[];

const STREAM_QUERY = 'streams=true&config=true';

/**
 * A JetStream cluster of nats-servers on loopback, each with its own client, route and
 * monitoring port and its own store under one temp dir. Node `i` (0-based) is server `n{i+1}`;
 * nodes can be killed and restarted on the same ports and store. Disposed with `await using`.
 */
export class NatsCluster implements AsyncDisposable {
  readonly #startTimeoutMs: number;
  #ownsDir = true;

  private constructor(
    readonly name: string,
    /** The temp dir holding every node's store (`n1/`, …) and configuration file (`n1.conf`, …). */
    readonly dir: string,
    readonly nodes: readonly NatsServerProcess[],
    /** Each node's monitoring endpoint (`http://127.0.0.1:<port>`, serving `/jsz`, `/healthz`, `/routez`, …). */
    readonly monitorUrls: readonly string[],
    startTimeoutMs: number,
  ) {
    this.#startTimeoutMs = startTimeoutMs;
  }

  /** Starts the nodes and resolves once every one of them follows the same JetStream meta leader. */
  static async start(options: NatsClusterOptions = {}): Promise<NatsCluster> {
    const size = options.size ?? 3;
    // One node with a cluster block waits for routes forever in nats-server 2.9: use NatsServerProcess for a single server.
    if (!Number.isInteger(size) || size < 2)
      throw new NatsEmbeddedError(
        NatsEmbeddedErrorCode.invalidArgument,
        `a cluster needs a whole number of nodes, at least 2 (got ${size}); use NatsServerProcess for one server`,
      );
    const binary = options.binary ?? findNatsServerBinary();
    if (!binary) throw new NatsEmbeddedError(NatsEmbeddedErrorCode.binaryNotFound, missingNatsServerHint());
    const name = options.name ?? 'flotilla';
    const startTimeoutMs = options.startTimeoutMs ?? 30_000;
    const ownsDir = options.dir === undefined;
    const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'flotilla-nats-cluster-')));
    try {
      const ports = await freePorts(size * 3);
      const clientPorts = ports.slice(0, size);
      const routePorts = ports.slice(size, 2 * size);
      const monitorPorts = ports.slice(2 * size);
      const onLog = options.onLog;
      const started = await Promise.allSettled(
        clientPorts.map((port, index) =>
          NatsServerProcess.start({
            binary,
            port,
            storeDir: join(dir, serverName(index)),
            config: clusterNodeConfig({
              clusterName: name,
              serverName: serverName(index),
              routePort: routePorts[index] ?? 0,
              monitorPort: monitorPorts[index] ?? 0,
              routePorts,
              extra: options.config,
            }),
            ...(onLog ? { onLog: (line: string) => onLog(index, line) } : {}),
          }).catch((error: unknown) => {
            throw new NatsEmbeddedError(
              NatsEmbeddedErrorCode.startFailed,
              `node ${serverName(index)} of cluster ${name} did not start: ${error instanceof Error ? error.message : String(error)}`,
              { cause: error },
            );
          }),
        ),
      );
      const nodes = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      const failure = started.find((result) => result.status === 'rejected');
      if (failure) {
        await Promise.all(nodes.map((node) => node[Symbol.asyncDispose]()));
        throw failure.reason;
      }
      const cluster = new NatsCluster(
        name,
        dir,
        nodes,
        monitorPorts.map((port) => `http://127.0.0.1:${port}`),
        startTimeoutMs,
      );
      cluster.#ownsDir = ownsDir;
      try {
        await cluster.#waitJoined(
          nodes.map((_, index) => index),
          startTimeoutMs,
          `the ${size} nodes of cluster ${name} to agree on a JetStream meta leader`,
        );
      } catch (error) {
        await cluster[Symbol.asyncDispose]();
        throw error;
      }
      return cluster;
    } catch (error) {
      if (ownsDir) await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** Stops every node gracefully (SIGTERM), keeping their stores. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }

  /** Client URLs, for a client's `servers` option (a fresh array each time). */
  get urls(): string[] {
    return this.nodes.map((node) => node.url);
  }

  /** Client URLs joined with commas. */
  get url(): string {
    return this.urls.join(',');
  }

  /** SIGKILLs node `index` (like a crash). */
  async kill(index: number): Promise<void> {
    await this.#node(index).kill();
  }

  /** Starts node `index` again on its ports and store, and waits until it follows the meta leader again. */
  async restart(index: number, timeoutMs = this.#startTimeoutMs): Promise<void> {
    await this.#node(index).restart();
    await this.#waitJoined([index], timeoutMs, `${serverName(index)} to rejoin the JetStream meta group`);
  }

  /**
   * The index of the node leading stream `streamName`: a running node that says it leads the
   * stream, named leader by a majority of the stream's replicas. Waits while there is none
   * (during an election after a leader was killed, nats-server 2.9 takes 4 to 9 s).
   */
  async streamLeader(streamName: string, timeoutMs = 15_000, options: StreamQueryOptions = {}): Promise<number> {
    return await pollUntil(
      `a leader of stream ${streamName}`,
      async () => this.#observeLeader(streamName, await this.#streamViews(streamName, options.account)),
      timeoutMs,
    );
  }

  /**
   * Resolves when every replica of stream `streamName` is current: the leader sees each one
   * current with no lag, and each replica's own copy has the leader's messages and sequences.
   * Meant for a stream nobody is publishing to at the time.
   */
  async waitCurrent(streamName: string, timeoutMs = 30_000, options: StreamQueryOptions = {}): Promise<void> {
    await pollUntil(
      `every replica of stream ${streamName} to be current`,
      async () => this.#observeCurrent(streamName, await this.#streamViews(streamName, options.account)),
      timeoutMs,
    );
  }

  /** Node `index`'s own copy of a stream, or undefined when that node is down or holds no replica of it. */
  async streamState(
    index: number,
    streamName: string,
    options: StreamQueryOptions = {},
  ): Promise<StreamReplicaState | undefined> {
    const state = onlyStream(await fetchJsz(this.#monitorUrl(index), STREAM_QUERY), streamName, options.account)?.state;
    if (!state) return undefined;
    return {
      messages: state.messages ?? 0,
      bytes: state.bytes ?? 0,
      firstSeq: state.first_seq ?? 0,
      lastSeq: state.last_seq ?? 0,
    };
  }

  /** Kills every node and removes the temp dir with their stores and configuration files (not a `dir` that was given). */
  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.kill()));
    if (this.#ownsDir) await rm(this.dir, { recursive: true, force: true });
  }

  #node(index: number): NatsServerProcess {
    const node = this.nodes[index];
    if (!node)
      throw new NatsEmbeddedError(
        NatsEmbeddedErrorCode.invalidArgument,
        `no node ${index}: the cluster has nodes 0 to ${this.nodes.length - 1}`,
      );
    return node;
  }

  #monitorUrl(index: number): string {
    this.#node(index);
    return this.monitorUrls[index] ?? '';
  }

  #indexOf(name: string | undefined): number | undefined {
    const index = this.nodes.findIndex((_, candidate) => serverName(candidate) === name);
    return index < 0 ? undefined : index;
  }

  async #waitJoined(indices: readonly number[], timeoutMs: number, description: string): Promise<void> {
    await pollUntil(
      description,
      async () => this.#observeJoined(indices, await Promise.all(this.monitorUrls.map((url) => fetchJsz(url)))),
      timeoutMs,
    );
  }

  /** Each of `indices` names a meta leader that agrees it leads and (unless it is that leader) sees it current. */
  #observeJoined(indices: readonly number[], views: readonly (Jsz | undefined)[]): Observation<void> {
    const leaders = new Set<string>();
    for (const index of indices) {
      const name = serverName(index);
      const leader = views[index]?.meta_cluster?.leader;
      if (leader === undefined || leader === '')
        return {
          done: false,
          reason: `${name} ${views[index] ? 'has no meta leader yet' : 'does not answer on its monitoring port'}`,
        };
      leaders.add(leader);
      const leaderIndex = this.#indexOf(leader);
      const leaderMeta = leaderIndex === undefined ? undefined : views[leaderIndex]?.meta_cluster;
      if (leaderMeta?.leader !== leader)
        return { done: false, reason: `${name} follows ${leader}, which does not say it leads` };
      if (leaderIndex !== index && leaderMeta.replicas?.find((replica) => replica.name === name)?.current !== true)
        return { done: false, reason: `meta leader ${leader} does not see ${name} current` };
    }
    if (leaders.size > 1)
      return { done: false, reason: `nodes follow different meta leaders (${[...leaders].join(', ')})` };
    return { done: true, value: undefined };
  }

  /** Each running node's own view of the stream (undefined for a node that is down or holds no replica). */
  async #streamViews(streamName: string, account: string | undefined): Promise<StreamViews> {
    return await Promise.all(
      this.nodes.map(async (node, index) =>
        node.running
          ? onlyStream(await fetchJsz(this.#monitorUrl(index), STREAM_QUERY), streamName, account)
          : undefined,
      ),
    );
  }

  #observeLeader(streamName: string, views: StreamViews): Observation<number> {
    const votes = new Map<number, number>();
    for (const view of views) {
      const named = this.#indexOf(view?.cluster?.leader);
      if (named !== undefined) votes.set(named, (votes.get(named) ?? 0) + 1);
    }
    for (const [candidate, count] of votes) {
      const own = views[candidate];
      // A node restarted a moment ago reports the leadership it had before it was killed: a majority must agree.
      const replicas = own?.config?.num_replicas ?? 1 + (own?.cluster?.replicas?.length ?? 0);
      if (own?.cluster?.leader === serverName(candidate) && count > replicas / 2)
        return { done: true, value: candidate };
    }
    if (views.every((view) => view === undefined))
      return { done: false, reason: `no running node reports stream ${streamName}` };
    const named = views.map(
      (view, index) =>
        `${serverName(index)}: ${view === undefined ? 'down or no replica' : (view.cluster?.leader ?? 'no leader')}`,
    );
    return { done: false, reason: `leaders named (${named.join(', ')})` };
  }

  #observeCurrent(streamName: string, views: StreamViews): Observation<void> {
    const leaderObservation = this.#observeLeader(streamName, views);
    if (!leaderObservation.done) return leaderObservation;
    const leaderIndex = leaderObservation.value;
    const leaderView = views[leaderIndex];
    const leader = serverName(leaderIndex);
    const replicas = leaderView?.cluster?.replicas ?? [];
    const expected = (leaderView?.config?.num_replicas ?? 1) - 1;
    if (replicas.length < expected)
      return { done: false, reason: `leader ${leader} lists ${replicas.length} of ${expected} followers` };
    for (const replica of replicas) {
      if (replica.current !== true || (replica.lag ?? 0) > 0)
        return {
          done: false,
          reason: `leader ${leader} sees ${replica.name ?? '?'} ${replica.current === true ? 'current' : 'not current'} with lag ${replica.lag ?? 0}`,
        };
    }
    const target = leaderView?.state;
    for (const replica of replicas) {
      const index = this.#indexOf(replica.name);
      const state = index === undefined ? undefined : views[index]?.state;
      if (!state) return { done: false, reason: `${replica.name ?? '?'} does not report its copy of the stream` };
      if (
        state.messages !== target?.messages ||
        state.first_seq !== target?.first_seq ||
        state.last_seq !== target?.last_seq
      ) {
        return {
          done: false,
          reason: `${replica.name ?? '?'} holds ${state.messages} messages (seq ${state.first_seq}..${state.last_seq}), leader ${leader} ${target?.messages} (seq ${target?.first_seq}..${target?.last_seq})`,
        };
      }
    }
    return { done: true, value: undefined };
  }
}

function serverName(index: number): string {
  return `n${index + 1}`;
}

function onlyStream(jsz: Jsz | undefined, streamName: string, account: string | undefined): JszStream | undefined {
  const found = findStreams(jsz, streamName, account);
  if (found.length > 1)
    throw new NatsEmbeddedError(
      NatsEmbeddedErrorCode.invalidArgument,
      `stream ${streamName} exists in several accounts (${found.map((entry) => entry.account).join(', ')}): pass the account option`,
    );
  return found[0]?.stream;
}
