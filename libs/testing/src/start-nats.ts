import { containerRuntimeAvailable, startNatsContainer, type NatsTestServer } from './nats-container.js';
import {
  findNatsServerBinary,
  missingNatsServerHint,
  NatsServerProcess,
  type NatsServerProcessOptions,
} from '@flotilla/nats-embedded';

/**
 * A NATS server for one test suite, in order of preference:
 * 1. `NATS_URL` when set (a shared server; cannot be killed or restarted);
 * 2. a `nats-server` binary new enough (findNatsServerBinary; own port and temp store dir);
 * 3. a container when a Docker engine is reachable.
 * Use with `await using nats = await startNats()`.
 */
export async function startNats(
  options: NatsServerProcessOptions & { readonly preferExternal?: boolean } = {},
): Promise<NatsTestServer> {
  const external = process.env['NATS_URL'];
  if (external && options.preferExternal !== false) return externalServer(external);
  if (options.binary ?? findNatsServerBinary()) return processServer(await NatsServerProcess.start(options));
  if (await containerRuntimeAvailable()) return await startNatsContainer();
  throw new Error(`No NATS server for tests: ${missingNatsServerHint()}, or make a Docker engine reachable.`);
}

function processServer(server: NatsServerProcess): NatsTestServer {
  return {
    url: server.url,
    kind: 'process',
    canRestart: true,
    kill: (signal) => server.kill(signal),
    restart: () => server.restart(),
    [Symbol.asyncDispose]: () => server[Symbol.asyncDispose](),
  };
}

function externalServer(url: string): NatsTestServer {
  const refuse = async (): Promise<never> => {
    throw new Error(`the external NATS server at ${url} (NATS_URL) cannot be killed or restarted by tests`);
  };
  return {
    url,
    kind: 'external',
    canRestart: false,
    kill: refuse,
    restart: refuse,
    [Symbol.asyncDispose]: async () => {},
  };
}
