import { CURRENT_PROTOCOL_VERSION, draftEvent } from '@flotilla/events';
import { EMPTY_TAIL, encodeCommit, EventLog, placeEvents, type Tail } from '@flotilla/log';
import { NatsCluster, NatsServerProcess } from '@flotilla/nats-embedded';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { percentile, ms, ratio, table } from './stats.js';

/**
 * Append latency of the log API (validation, seq placement, encoding, optimistic concurrency,
 * de-duplication id) against a raw JetStream publish of the same bytes and headers, on the same
 * server in the same run. Rounds alternate between the two so drift affects both alike.
 *
 * With `nodes` 3: on a 3-node JetStream cluster of its own, the stream R3, one client connected
 * to a node picked at random (as any client is) doing both. An append reads nothing (the caller
 * passes the tail it decided on), so on R3 too the raw floor is the same publish: bytes, headers,
 * msg id and expected last subject sequence, acknowledged once a quorum stored it.
 * The server (or cluster) is the benchmark's own, without authorization.
 */
export async function benchLogAppend(rounds = 20, perRound = 100, nodes = 1): Promise<string> {
  await using servers = nodes > 1 ? await NatsCluster.start({ size: nodes }) : await NatsServerProcess.start();
  const nc = await connect({ servers: servers instanceof NatsCluster ? servers.urls : servers.url });
  try {
    const log = await EventLog.open(nc, { streamName: 'BENCH_APPEND', subjectPrefix: 'bench.append', replicas: nodes });
    const js = jetstream(nc);
    const ref = { tenant: 'bench', conversation: 'append' };
    const rawRef = { tenant: 'bench', conversation: 'raw' };
    const draft = () =>
      draftEvent({ ...ref, source: 'agent' }, 'action', {
        tool_call_id: 'call_1',
        tool_name: 'terminal',
        arguments: '{"command":"ls -la"}',
        input: { command: 'ls -la' },
        thought: [{ type: 'text', text: 'Let me look at the files in the workspace first.' }],
        response_id: 'resp_1',
        security_risk: 'low',
      });
    // raw payload: the same encoded commit the log would write
    const sample = encodeCommit('x', rawRef, placeEvents(rawRef, [{ ...draft(), conversation: 'raw' }], 0));
    const apiTimes: number[] = [];
    const rawTimes: number[] = [];
    let tail: Tail = EMPTY_TAIL;
    let rawSeq = 0;
    let counter = 0;
    const runApi = async (count: number, record: boolean): Promise<void> => {
      for (let index = 0; index < count; index += 1) {
        const drafts = [draft()]; // building the event is the caller's work, not the log's
        const start = performance.now();
        const commit = await log.append(ref, drafts, { expected: tail });
        const elapsed = performance.now() - start;
        tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
        if (record) apiTimes.push(elapsed);
      }
    };
    const runRaw = async (count: number, record: boolean): Promise<void> => {
      for (let index = 0; index < count; index += 1) {
        counter += 1;
        const start = performance.now();
        const ack = await js.publish(log.subject(rawRef), sample.data, {
          headers: sample.headers,
          msgID: `raw-${counter}`,
          expect: { lastSubjectSequence: rawSeq },
        });
        const elapsed = performance.now() - start;
        rawSeq = ack.seq;
        if (record) rawTimes.push(elapsed);
      }
    };
    await runApi(200, false);
    await runRaw(200, false);
    for (let round = 0; round < rounds; round += 1) {
      if (round % 2 === 0) {
        await runApi(perRound, true);
        await runRaw(perRound, true);
      } else {
        await runRaw(perRound, true);
        await runApi(perRound, true);
      }
    }
    const rows = [
      ['append', 'p50', 'p99', 'n'],
      ['raw js.publish', ms(percentile(rawTimes, 50)), ms(percentile(rawTimes, 99)), String(rawTimes.length)],
      ['EventLog.append', ms(percentile(apiTimes, 50)), ms(percentile(apiTimes, 99)), String(apiTimes.length)],
      [
        'ratio',
        ratio(percentile(apiTimes, 50), percentile(rawTimes, 50)),
        ratio(percentile(apiTimes, 99), percentile(rawTimes, 99)),
        '',
      ],
    ];
    const where = servers instanceof NatsCluster ? `, ${nodes}-node cluster, stream R${nodes}` : '';
    const title = `Append latency (protocol v${CURRENT_PROTOCOL_VERSION}, one ~600-byte action event per commit${where}, goal: p50 ratio <= 1.25)`;
    const placement =
      servers instanceof NatsCluster
        ? [
            `placement: stream leader ${(await log.jsm.streams.info(log.streamName)).cluster?.leader ?? '?'}, client on ${nc.info?.server_name ?? '?'}`,
          ]
        : [];
    return [title, table(rows), ...placement].join('\n');
  } finally {
    await nc.close();
  }
}
