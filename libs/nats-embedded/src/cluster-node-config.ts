export type ClusterNodeConfigInput = {
  readonly clusterName: string;
  readonly serverName: string;
  readonly routePort: number;
  readonly monitorPort: number;
  /** Every node's route port, this node's included (nats-server drops the route to itself). */
  readonly routePorts: readonly number[];
  /** Shared configuration text appended to every node's file (auth, tls, …). */
  readonly extra: string | undefined;
};

/** The nats-server configuration file of one cluster node on loopback; the client port, store and `-js` come as flags. */
export function clusterNodeConfig(input: ClusterNodeConfigInput): string {
  const routes = input.routePorts.map((port) => `    ${JSON.stringify(`nats-route://127.0.0.1:${port}`)}`);
  return [
    `# written by @flotilla/nats-embedded: node ${input.serverName} of cluster ${input.clusterName}`,
    `server_name: ${JSON.stringify(input.serverName)}`,
    `http: ${JSON.stringify(`127.0.0.1:${input.monitorPort}`)}`,
    'cluster {',
    `  name: ${JSON.stringify(input.clusterName)}`,
    `  listen: ${JSON.stringify(`127.0.0.1:${input.routePort}`)}`,
    '  routes: [',
    ...routes,
    '  ]',
    '}',
    ...(input.extra === undefined ? [] : ['', input.extra]),
    '',
  ].join('\n');
}
