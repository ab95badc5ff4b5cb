import { EventLog } from '@flotilla/log';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { connect } from '@nats-io/transport-node';
import { memoryMiB } from './process-stats.js';
import { median, ratio, table } from './stats.js';
import {
  BENCH_TENANT,
  closeSockets,
  createConversation,
  openSockets,
  startBaseline,
  startGateway,
  type SocketServer,
} from './ws-fanout.bench.js';

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** The gateway keeps a conversation's feed this long after its last socket left (socket-hub.ts), plus a margin. */
const FEED_LINGER_MS = 6_000;

type IdleMemory = { name: string; before: number; after: number; perConnectionKiB: number };

/**
 * Resident memory per idle WebSocket connection: the server process's RSS after a warm-up with
 * no socket open, then with `connections` authenticated live sockets spread over `conversations`
 * conversations and nothing flowing, for the gateway and for a bare `ws` server holding as many
 * sockets, same run. The client sides live in the bench process and are not counted.
 */
export async function benchWsIdleMemory(connections = 2_000, conversations = 20, settleMs = 3_000): Promise<string> {
  await using server = await NatsServerProcess.start();
  const nc = await connect({ servers: server.url });
  try {
    const log = await EventLog.open(nc);
    const refs = Array.from({ length: conversations }, (_, index) => ({
      tenant: BENCH_TENANT,
      conversation: `idle-${index}`,
    }));
    for (const ref of refs) await createConversation(log, ref);
    const tailSeq = (await log.tail(refs[0]!)).lastSeq;
    const urls = (target: SocketServer): string[] =>
      Array.from({ length: connections }, (_, index) =>
        target.socketUrl(refs[index % conversations]!.conversation, tailSeq),
      );

    const gateway = await (async () => {
      await using target = await startGateway(server.url, 5_000);
      const warmUp = async (): Promise<void> => {
        const headers = target.authHeaders;
        for (const path of ['/health', '/ready', '/v1/server-info', '/v1/conversations'])
          await (await fetch(`${target.httpUrl}${path}`, { headers })).arrayBuffer();
        for (const ref of refs.slice(0, 3))
          await (await fetch(`${target.httpUrl}/v1/conversations/${ref.conversation}`, { headers })).arrayBuffer();
        await closeSockets(await openSockets(target, urls(target).slice(0, 1)));
        await delay(FEED_LINGER_MS); // let the warm-up socket's feed go
      };
      return await measureIdle(target, warmUp, urls(target), settleMs); // await: dispose after
    })();
    const baseline = await (async () => {
      await using target = await startBaseline(server.url, log.subject(refs[0]!));
      const warmUp = async (): Promise<void> => {
        await closeSockets(await openSockets(target, urls(target).slice(0, 1)));
        await delay(1_000);
      };
      return await measureIdle(target, warmUp, urls(target), settleMs); // await: dispose after
    })();

    const row = (result: IdleMemory): string[] => [
      result.name,
      mib(result.before),
      mib(result.after),
      `${result.perConnectionKiB.toFixed(1)} KiB`,
    ];
    return [
      `Memory per idle WebSocket connection: server RSS with 0 sockets (after a warm-up) and with ${connections} authenticated live sockets`,
      `over ${conversations} conversations, nothing flowing, ${settleMs / 1_000} s after the last opened (goal: gateway <= 50 KiB per connection)`,
      table([
        ['server', 'RSS, 0 sockets', `RSS, ${connections} sockets`, 'per connection'],
        row(gateway),
        row({ ...baseline, name: 'baseline (bare ws)' }),
        ['gateway / baseline', '', '', ratio(gateway.perConnectionKiB, baseline.perConnectionKiB)],
      ]),
      `goal <= 50 KiB per idle connection: ${gateway.perConnectionKiB <= 50 ? 'met' : 'NOT met'} (gateway ${gateway.perConnectionKiB.toFixed(1)} KiB)`,
    ].join('\n');
  } finally {
    await nc.close();
  }
}

async function measureIdle(
  target: SocketServer,
  warmUp: () => Promise<void>,
  urls: readonly string[],
  settleMs: number,
): Promise<IdleMemory> {
  await warmUp();
  const before = await settledRss(target.pid, settleMs);
  const sockets = await openSockets(target, urls);
  try {
    const after = await settledRss(target.pid, settleMs);
    return { name: target.name, before, after, perConnectionKiB: ((after - before) * 1024) / urls.length };
  } finally {
    await closeSockets(sockets);
  }
}

/** Waits `settleMs`, then takes the median of five RSS readings a quarter second apart (MiB). */
async function settledRss(pid: number, settleMs: number): Promise<number> {
  await delay(settleMs);
  const readings: number[] = [];
  for (let index = 0; index < 5; index += 1) {
    if (index > 0) await delay(250);
    readings.push((await memoryMiB(pid)).rss);
  }
  return median(readings);
}

function mib(value: number): string {
  return `${value.toFixed(1)} MiB`;
}
