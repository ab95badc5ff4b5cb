import type { NatsCluster } from '@flotilla/nats-embedded';
import type { JetStreamManager } from '@nats-io/jetstream';

type Connz = { readonly connections?: readonly { readonly name?: string; readonly authorized_user?: string }[] };

/**
 * Where a benchmark's parts sit on a cluster, as one line: the stream's leader, each consumer's
 * leader, and the node each client connection landed on (clients pick a node at random). On
 * R3 these decide how many route hops a publish, an acknowledgement or a delivery takes, so a
 * run's figures are read with them.
 */
export async function describePlacement(
  cluster: NatsCluster,
  jsm: JetStreamManager,
  stream: string,
  consumers: readonly string[],
): Promise<string> {
  const info = await jsm.streams.info(stream);
  const leaders = await Promise.all(
    consumers.map(async (name) => `${name} ${(await jsm.consumers.info(stream, name)).cluster?.leader ?? '?'}`),
  );
  const connections = await connectionNodes(cluster);
  return `placement: stream ${stream} leader ${info.cluster?.leader ?? '?'}; consumer leaders ${leaders.join(', ')}; connections ${connections.join(', ')}`;
}

/** `<user or name> <node>` for every client connection of the cluster, from each node's /connz. */
async function connectionNodes(cluster: NatsCluster): Promise<string[]> {
  const found: string[] = [];
  for (const [index, url] of cluster.monitorUrls.entries()) {
    const connz = (await (await fetch(`${url}/connz?auth=true&limit=4096`)).json()) as Connz;
    for (const connection of connz.connections ?? [])
      found.push(`${connection.name || connection.authorized_user || '?'} n${index + 1}`);
  }
  return found.sort();
}
