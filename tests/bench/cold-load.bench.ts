import { EventLog } from '@flotilla/log';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { buildView, toChatMessages } from '@flotilla/view';
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { writeConversation } from './conversation-fixture.js';
import { median, ms, ratio, table } from './stats.js';

/**
 * Cold load of a conversation into an LLM-ready view (read + validate every commit, build the
 * view, convert to chat messages) against a raw ordered-consumer replay of the same subject
 * (every message delivered, nothing decoded), same server, same run.
 */
export async function benchColdLoad(sizes: readonly number[] = [1_000, 10_000], repeats = 9): Promise<string> {
  await using server = await NatsServerProcess.start();
  const nc = await connect({ servers: server.url });
  try {
    const log = await EventLog.open(nc, { streamName: 'BENCH_LOAD', subjectPrefix: 'bench.load' });
    const js = jetstream(nc);
    const rows = [['events', 'commits', 'raw replay p50', 'load to view p50', 'ratio']];
    for (const size of sizes) {
      const ref = { tenant: 'bench', conversation: `load${size}` };
      const tail = await writeConversation(log, ref, size);
      const subject = log.subject(ref);
      const raw: number[] = [];
      const loaded: number[] = [];
      let commits = 0;
      for (let round = 0; round < repeats + 1; round += 1) {
        let start = performance.now();
        const consumer = await js.consumers.get(log.streamName, { filter_subjects: subject, deliver_policy: DeliverPolicy.All });
        const messages = await consumer.consume({ max_messages: 1024 });
        let count = 0;
        for await (const message of messages) {
          count += message.data.length > 0 ? 1 : 0;
          if (message.seq >= tail.streamSeq || message.info.pending === 0) break;
        }
        await messages.close();
        if (round > 0) raw.push(performance.now() - start);
        commits = count;
        start = performance.now();
        const { events } = await log.readEvents(ref);
        const messagesForModel = toChatMessages(buildView(events));
        if (round > 0) loaded.push(performance.now() - start);
        if (events.length !== tail.lastSeq || messagesForModel.length === 0) throw new Error('load returned the wrong conversation');
      }
      rows.push([String(tail.lastSeq), String(commits), ms(median(raw)), ms(median(loaded)), ratio(median(loaded), median(raw))]);
    }
    return `Cold load into an LLM-ready view (goal: ratio <= 1.5; 1,000 events under 20 ms)\n${table(rows)}`;
  } finally {
    await nc.close();
  }
}
