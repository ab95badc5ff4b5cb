import { createServer } from 'node:net';

/** True when nothing listens on the port on 127.0.0.1. */
export async function portIsFree(port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
