// The commit consumer's test files: a nats-server of their own, a connection to it, and a stream
// with a durable consumer group to consume.
import { EventLog } from '@flotilla/log';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import type { CommitConsumerOptions } from '../commit-consumer.js';
import { ensureDurableConsumer } from '../durable-consumer.js';
import { ServiceMetrics } from '../metrics.js';

export let server: NatsTestServer;
export let nc: NatsConnection;

/** Before the file's tests: a nats-server (`server`) and a connection to it (`nc`); both closed after them. */
export function startNatsForFile(): void {
  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
  });

  afterAll(async () => {
    await nc.close();
    await server[Symbol.asyncDispose]();
  });
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
