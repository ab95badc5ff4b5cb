// The commit consumer's test files: a nats-server of their own, a connection to it, and a stream
// with a durable consumer group to consume.
import { EventLog } from '@flotilla/log';
import { freePort, startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import type { CommitConsumerOptions } from '../commit-consumer.js';
import { ensureDurableConsumer } from '../durable-consumer.js';
import { ServiceMetrics } from '../metrics.js';

export let server: NatsTestServer;
export let nc: NatsConnection;
/** The server's monitoring endpoint (`http://127.0.0.1:<port>`), when the file asked for one. */
export let monitorUrl: string | undefined;

/**
 * Before the file's tests: a nats-server (`server`) and a connection to it (`nc`); both closed after them.
 * With `monitor`, a server of the file's own (never a shared one) serving its monitoring endpoint at `monitorUrl`.
 */
export function startNatsForFile(options: { readonly monitor?: boolean } = {}): void {
  beforeAll(async () => {
    if (options.monitor) {
      const port = await freePort();
      server = await startNats({ preferExternal: false, extraArgs: ['-m', String(port)] });
      monitorUrl = `http://127.0.0.1:${port}`;
    } else {
      server = await startNats();
    }
    nc = await connect({ servers: server.url });
  });

  afterAll(async () => {
    await nc.close();
    await server[Symbol.asyncDispose]();
  });
}

/** Until the server has seen `connection` close (its monitoring endpoint no longer lists it); needs `monitor`. */
export async function serverSawClose(connection: NatsConnection): Promise<void> {
  const cid = connection.info?.client_id;
  if (monitorUrl === undefined || cid === undefined)
    throw new Error('serverSawClose needs startNatsForFile({ monitor: true }) and a connected client');
  await connection.close();
  for (;;) {
    const connz = (await (await fetch(`${monitorUrl}/connz?cid=${cid}`)).json()) as { num_connections: number };
    if (connz.num_connections === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A stream of its own with a durable consumer group `group`, and the options to consume it. */
export async function group(
  ackWaitMs: number,
  maxAckPending: number,
): Promise<{ log: EventLog; js: JetStreamClient; options: Omit<CommitConsumerOptions, 'handler' | 'concurrency'> }> {
  const name = uniqueName('CC');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  await ensureDurableConsumer(log.jsm, {
    stream: name,
    name: 'group',
    filterSubjects: [`${log.subjectPrefix}.>`],
    ackWaitMs,
    maxAckPending,
  });
  const js = jetstream(nc);
  const options = {
    js,
    stream: name,
    consumer: 'group',
    subjectPrefix: log.subjectPrefix,
    ackWaitMs,
    logger: pino({ level: 'silent' }),
    metrics: new ServiceMetrics('test'),
  };
  return { log, js, options };
}
