/** Where a test's NATS server comes from. */
export type NatsTestServer = AsyncDisposable & {
  readonly url: string;
  readonly kind: 'process' | 'external' | 'container';
  /** False for an external server (NATS_URL): tests that crash the server must skip. */
  readonly canRestart: boolean;
  kill(signal?: NodeJS.Signals): Promise<void>;
  restart(): Promise<void>;
};

const NATS_IMAGE = process.env['NATS_IMAGE'] ?? 'nats:2.15.1-alpine';

/** Is a Docker (or compatible) engine reachable? Never throws. */
export async function containerRuntimeAvailable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/** A nats-server in a container, for machines with a Docker engine and no nats-server binary. */
export async function startNatsContainer(): Promise<NatsTestServer> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer(NATS_IMAGE)
    .withCommand(['-js', '-sd', '/data'])
    .withExposedPorts(4222)
    .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
    .start();
  const url = `nats://${container.getHost()}:${container.getMappedPort(4222)}`;
  return {
    url,
    kind: 'container',
    canRestart: true,
    async kill() {
      await container.stop({ timeout: 0 });
    },
    async restart() {
      await container.restart({ timeout: 0 });
    },
    async [Symbol.asyncDispose]() {
      await container.stop({ timeout: 0, remove: true });
    },
  };
}
