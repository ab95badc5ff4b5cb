import { createServer, type Server } from 'node:net';

/** Asks the OS for a free TCP port on the loopback interface. */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  if (port === undefined) throw new Error('could not get a free port');
  return port;
}

/** Asks the OS for `count` distinct free TCP ports on the loopback interface (all held open at once, so none repeats). */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let index = 0; index < count; index++) {
      const server = createServer();
      servers.push(server);
      server.unref();
      ports.push(await listenOnFreePort(server));
    }
    return ports;
  } finally {
    await Promise.all(
      servers.map(
        (server) => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())),
      ),
    );
  }
}

async function listenOnFreePort(server: Server): Promise<number> {
  return await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      if (port > 0) resolve(port);
      else reject(new Error('could not get a free port'));
    });
  });
}
