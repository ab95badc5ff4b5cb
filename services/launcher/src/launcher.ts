import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { EventLog } from '@flotilla/log';
import { freePort, NatsServerProcess } from '@flotilla/nats-embedded';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { LauncherConfig } from './config.js';
import { portIsFree } from './port-free.js';

export type LauncherOutput = { info(line: string): void; warn(line: string): void };

/** The running system: its NATS address and how to stop it. */
export type RunningSystem = AsyncDisposable & { readonly natsUrl: string; readonly embedded: boolean };

/**
 * Starts the system on one machine: an embedded nats-server (unless one is configured),
 * the events stream, and (as later parts land) one process of each service.
 */
export async function launch(config: LauncherConfig, output: LauncherOutput): Promise<RunningSystem> {
  let server: NatsServerProcess | undefined;
  let natsUrl = config.natsUrl;
  if (!natsUrl) {
    const storeDir = join(config.home, 'nats');
    await mkdir(storeDir, { recursive: true });
    let port = config.natsPort;
    if (!(await portIsFree(port))) {
      const fallback = await freePort();
      output.warn(`port ${port} is busy; the embedded nats-server uses ${fallback} instead (set FLOTILLA_NATS_PORT to choose)`);
      port = fallback;
    }
    server = await NatsServerProcess.start({ port, storeDir });
    natsUrl = server.url;
    output.info(`nats-server ${natsUrl} (JetStream store ${storeDir})`);
  }
  let nc: NatsConnection | undefined;
  try {
    nc = await connect({ servers: natsUrl, name: 'flotilla-launcher', maxReconnectAttempts: -1 });
    const log = await EventLog.open(nc, { streamName: config.streamName });
    const info = await log.jsm.streams.info(log.streamName);
    output.info(`events stream ${log.streamName} on ${log.subjectPrefix}.<tenant>.<conversation> (${info.state.messages} commits stored)`);
  } catch (error) {
    await nc?.close();
    await server?.stop();
    throw error;
  }
  const connection = nc;
  return {
    natsUrl,
    embedded: server !== undefined,
    async [Symbol.asyncDispose]() {
      await connection.drain().catch(() => undefined);
      await server?.stop();
    },
  };
}
