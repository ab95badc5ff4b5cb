/**
 * The parts of nats-server 2.9's `/jsz` monitoring reply that this lib reads. Every field is
 * optional: the reply is read tolerantly, and nats-server leaves out zero values (`lag`) and,
 * on a node that is not the leader, the `replicas` of the meta group.
 */
export type JszReplica = {
  readonly name?: string;
  readonly current?: boolean;
  /** Nanoseconds since the leader last heard from this replica. */
  readonly active?: number;
  /** Raft entries this replica is behind; left out when 0. */
  readonly lag?: number;
  readonly offline?: boolean;
};

export type JszClusterInfo = {
  readonly name?: string;
  readonly leader?: string;
  /** Only the leader's view is kept up to date: followers report stale, even self-including, lists. */
  readonly replicas?: readonly JszReplica[];
};

export type JszStreamState = {
  readonly messages?: number;
  readonly bytes?: number;
  readonly first_seq?: number;
  readonly last_seq?: number;
};

export type JszStream = {
  readonly name?: string;
  readonly cluster?: JszClusterInfo;
  /** Present with `config=true`. */
  readonly config?: { readonly num_replicas?: number };
  readonly state?: JszStreamState;
};

export type JszAccount = {
  readonly name?: string;
  readonly id?: string;
  readonly stream_detail?: readonly JszStream[];
};

export type Jsz = {
  readonly meta_cluster?: JszClusterInfo & { readonly cluster_size?: number };
  /** Present with `accounts=true` or `streams=true`; `$G` holds JetStream when no accounts are configured. */
  readonly account_details?: readonly JszAccount[];
};

/** Reads `/jsz?<query>` from a node's monitoring endpoint, or undefined when the node does not answer (killed, still starting). */
export async function fetchJsz(monitorUrl: string, query = ''): Promise<Jsz | undefined> {
  try {
    const response = await fetch(`${monitorUrl}/jsz${query === '' ? '' : `?${query}`}`, {
      signal: AbortSignal.timeout(2_000),
    });
    if (!response.ok) return undefined;
    const body: unknown = await response.json();
    return typeof body === 'object' && body !== null ? (body as Jsz) : undefined;
  } catch {
    return undefined;
  }
}

/** The streams called `streamName` in a node's reply, in `account` (name or id) or in any account. */
export function findStreams(
  jsz: Jsz | undefined,
  streamName: string,
  account: string | undefined,
): { readonly account: string; readonly stream: JszStream }[] {
  const found: { account: string; stream: JszStream }[] = [];
  for (const details of jsz?.account_details ?? []) {
    const accountName = details.name ?? details.id ?? '';
    if (account !== undefined && details.name !== account && details.id !== account) continue;
    for (const stream of details.stream_detail ?? [])
      if (stream.name === streamName) found.push({ account: accountName, stream });
  }
  return found;
}
