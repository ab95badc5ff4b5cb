import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { draftEvent } from '@flotilla/events';
import { appendWithRetry, EventLog, type ConversationRef, type Tail } from '@flotilla/log';
import { freePort, NatsServerProcess } from '@flotilla/nats-embedded';
import { formatLogLine, ServiceProcess, waitReady } from '@flotilla/supervisor';
import { connect } from '@nats-io/transport-node';
import WebSocket from 'ws';
import { serviceEntry } from '../support/system.js';
import { cpuSeconds } from './process-stats.js';
import { median, percentile, ratio, table } from './stats.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BENCH_TENANT = 'bench';
const BENCH_KEY = 'bench-key-0123456789abcdef';
const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A WebSocket server under test, running as its own process. */
export type SocketServer = AsyncDisposable & {
  readonly name: string;
  readonly pid: number;
  /** Where REST calls go (the gateway's; the baseline answers only /ready). */
  readonly httpUrl: string;
  /** The frame a client sends first, if the server wants one. */
  readonly authFrame: string | undefined;
  readonly authHeaders: Record<string, string>;
  socketUrl(conversation: string, afterSeq: number): string;
};

/** Starts one gateway process (rate limit off, web UI off) on a free port and waits until it is ready. */
export async function startGateway(natsUrl: string, maxSubscribers: number): Promise<SocketServer> {
  const port = await freePort();
  const service = new ServiceProcess({
    name: 'gateway',
    entry: await serviceEntry(join(ROOT, 'services', 'gateway', 'src', 'main.ts')),
    cwd: ROOT,
    restart: false,
    env: {
      FLOTILLA_NATS_URL: natsUrl,
      FLOTILLA_GATEWAY_PORT: String(port),
      FLOTILLA_API_KEYS: `${BENCH_TENANT}:${BENCH_KEY}`,
      FLOTILLA_GATEWAY_MAX_SUBSCRIBERS: String(maxSubscribers),
      FLOTILLA_GATEWAY_RATE_LIMIT: '0',
      FLOTILLA_GATEWAY_WEB_UI: 'false',
      FLOTILLA_LOG_LEVEL: 'warn',
    },
    onLine: (name, line) => process.stderr.write(`${formatLogLine(name, line)}\n`),
  });
  return startProcess(service, port, {
    authFrame: JSON.stringify({ type: 'auth', api_key: BENCH_KEY }),
    authHeaders: { authorization: `Bearer ${BENCH_KEY}` },
    socketUrl: (conversation, afterSeq) =>
      `ws://127.0.0.1:${port}/v1/conversations/${conversation}/events?after_seq=${afterSeq}`,
  });
}

/**
 * Starts the bare `ws` + core NATS baseline (ws-baseline-server.ts) relaying `subject` to all its
 * clients. `credentials`: the environment of the admin's credential (`userEnvironment`), for a
 * server that refuses anonymous clients.
 */
export async function startBaseline(
  natsUrl: string,
  subject: string,
  credentials: Record<string, string> = {},
): Promise<SocketServer> {
  const port = await freePort();
  const service = new ServiceProcess({
    name: 'ws-baseline',
    entry: await serviceEntry(fileURLToPath(new URL('./ws-baseline-server.ts', import.meta.url))),
    cwd: ROOT,
    restart: false,
    env: { BENCH_NATS_URL: natsUrl, BENCH_SUBJECT: subject, BENCH_PORT: String(port), ...credentials },
    onLine: (name, line) => process.stderr.write(`${name}: ${line}\n`),
  });
  return startProcess(service, port, {
    authFrame: undefined,
    authHeaders: {},
    socketUrl: () => `ws://127.0.0.1:${port}/`,
  });
}

async function startProcess(
  service: ServiceProcess,
  port: number,
  client: Pick<SocketServer, 'authFrame' | 'authHeaders' | 'socketUrl'>,
): Promise<SocketServer> {
  service.start();
  const httpUrl = `http://127.0.0.1:${port}`;
  try {
    await waitReady(httpUrl, 60_000);
  } catch (error) {
    await service.stop();
    throw error;
  }
  return { name: service.name, pid: service.pid!, httpUrl, ...client, [Symbol.asyncDispose]: () => service.stop() };
}

/** Creates a conversation by appending its first commit straight to the log (an empty log is a 404). */
export async function createConversation(log: EventLog, ref: ConversationRef): Promise<Tail> {
  const commit = await appendWithRetry(log, ref, () => [
    draftEvent({ ...ref, source: 'system' }, 'state_change', { status: 'idle', reason: 'benchmark fixture' }),
    draftEvent({ ...ref, source: 'user' }, 'message', {
      role: 'user',
      content: [{ type: 'text', text: 'Watch this conversation.' }],
    }),
  ]);
  return { streamSeq: commit!.streamSeq, lastSeq: commit!.lastSeq };
}

const LIVE_HEAD = '{"type":"live"';

/**
 * Opens sockets `batch` at a time (each batch fully live before the next starts, so neither
 * an auth burst nor the accept backlog shapes the figures). Resolves once every socket has had
 * its `live` frame; `onMessage` sees every frame after that.
 */
export async function openSockets(
  server: SocketServer,
  urls: readonly string[],
  onMessage: (data: Buffer) => void = () => undefined,
  batch = 50,
): Promise<WebSocket[]> {
  const sockets: WebSocket[] = [];
  for (let start = 0; start < urls.length; start += batch) {
    sockets.push(
      ...(await Promise.all(urls.slice(start, start + batch).map((url) => openSocket(server, url, onMessage)))),
    );
  }
  return sockets;
}

function openSocket(server: SocketServer, url: string, onMessage: (data: Buffer) => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { perMessageDeflate: false, skipUTF8Validation: true });
    let live = false;
    const timer = setTimeout(() => {
      socket.terminate();
      reject(new Error(`${server.name}: ${url} was not live within 30 s`));
    }, 30_000);
    socket.on('open', () => server.authFrame && socket.send(server.authFrame));
    socket.on('message', (data) => {
      if (live) return onMessage(data as Buffer);
      if (!(data as Buffer).toString('latin1', 0, LIVE_HEAD.length).startsWith(LIVE_HEAD)) return; // sync, replay
      live = true;
      clearTimeout(timer);
      resolve(socket);
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('close', (code, reason) => {
      clearTimeout(timer);
      if (!live) reject(new Error(`${server.name}: ${url} closed before live (${code} ${reason.toString()})`));
    });
  });
}

/** Closes sockets politely and waits (bounded) for the closes; stragglers are terminated. */
export async function closeSockets(sockets: readonly WebSocket[]): Promise<void> {
  const closed = sockets.map((socket) =>
    socket.readyState === WebSocket.CLOSED
      ? Promise.resolve()
      : new Promise<void>((resolve) => socket.once('close', () => resolve())),
  );
  for (const socket of sockets) socket.close();
  await Promise.race([Promise.all(closed), delay(10_000)]);
  for (const socket of sockets) if (socket.readyState !== WebSocket.CLOSED) socket.terminate();
}

const MARKER = 'bench-t=';
const EVENT_HEAD = /^\{"type":"event","seq":\d+,/;
const now = (): number => performance.timeOrigin + performance.now();

/** One server's figures, summed over its rounds. */
type Tally = {
  readonly name: string;
  readonly latencies: number[];
  received: number;
  expected: number;
  events: number;
  serverCpuSeconds: number;
  benchCpuSeconds: number;
  readonly connectSeconds: number[];
  readonly roundP99: number[];
};

type RoundOptions = { subscribers: number; events: number; intervalMs: number; warmUp: number };

/**
 * Fan-out latency of one conversation's events to many subscribers of the gateway, against a bare
 * `ws` server relaying a core NATS subscription of the same subject (the floor of NATS → WebSocket
 * fan-out on this machine), same NATS server, same run. Each event is one commit holding a small
 * assistant message whose text carries its append start time; a delivery's latency is its receipt
 * time in a subscriber minus that. Appends are paced so this measures latency, not a backlog.
 * Rounds alternate between the two servers (all subscribers reconnect each round) so that drift
 * in the machine's load affects both alike.
 */
export async function benchWsFanout(
  subscribers = 1_000,
  events = 200,
  intervalMs = 100,
  rounds = 4,
  warmUp = 5,
): Promise<string> {
  await using server = await NatsServerProcess.start();
  const nc = await connect({ servers: server.url });
  try {
    const log = await EventLog.open(nc);
    const ref = { tenant: BENCH_TENANT, conversation: 'fanout' };
    await createConversation(log, ref);
    await using gateway = await startGateway(server.url, 5_000);
    await using baseline = await startBaseline(server.url, log.subject(ref));
    const tallies = [gateway, baseline].map((target): Tally => ({
      name: target === gateway ? 'gateway' : 'baseline (bare ws + core NATS sub)',
      latencies: [],
      received: 0,
      expected: 0,
      events: 0,
      serverCpuSeconds: 0,
      benchCpuSeconds: 0,
      connectSeconds: [],
      roundP99: [],
    }));
    const options = { subscribers, events: Math.ceil(events / rounds), intervalMs, warmUp };
    for (let round = 0; round < rounds; round += 1) {
      await measureRound(gateway, tallies[0]!, log, ref, options);
      await measureRound(baseline, tallies[1]!, log, ref, options);
    }
    const [ofGateway, ofBaseline] = tallies as [Tally, Tally];
    const figures = (tally: Tally) => ({
      p50: percentile(tally.latencies, 50),
      p99: percentile(tally.latencies, 99),
      max: percentile(tally.latencies, 100),
      serverCpu: (tally.serverCpuSeconds * 1_000) / tally.events,
      benchCpu: (tally.benchCpuSeconds * 1_000) / tally.events,
    });
    const g = figures(ofGateway);
    const b = figures(ofBaseline);
    const row = (tally: Tally, f: typeof g): string[] => [
      tally.name,
      msText(f.p50),
      msText(f.p99),
      msText(f.max),
      `${tally.received} / ${tally.expected}${tally.received === tally.expected ? '' : '  MISMATCH'}`,
      msText(f.serverCpu),
      msText(f.benchCpu),
      `${median(tally.connectSeconds).toFixed(1)} s`,
    ];
    const complete = ofGateway.received === ofGateway.expected;
    return [
      `WebSocket fan-out: ${subscribers} subscribers on one conversation, ${ofGateway.events} events per server (one commit each, one every ${intervalMs} ms),`,
      `${rounds} alternating rounds; latency from append start to receipt in each subscriber (goal: gateway p99 <= 50 ms)`,
      table([
        [
          'server',
          'p50',
          'p99',
          'max',
          'deliveries',
          'server CPU per event',
          'bench CPU per event',
          `time to ${subscribers} live (median)`,
        ],
        row(ofGateway, g),
        row(ofBaseline, b),
        [
          'gateway / baseline',
          ratio(g.p50, b.p50),
          ratio(g.p99, b.p99),
          ratio(g.max, b.max),
          '',
          ratio(g.serverCpu, b.serverCpu),
          '',
          '',
        ],
      ]),
      `p99 by round: gateway ${ofGateway.roundP99.map((value) => value.toFixed(1)).join(', ')}; baseline ${ofBaseline.roundP99.map((value) => value.toFixed(1)).join(', ')} ms`,
      `goal p99 <= 50 ms: ${g.p99 <= 50 && complete ? 'met' : 'NOT met'} (gateway p99 ${msText(g.p99)}${complete ? '' : ', deliveries missing'})`,
    ].join('\n');
  } finally {
    await nc.close();
  }
}

/** Connects all subscribers to one server, appends a few unmeasured events, then the measured ones, and disconnects. */
async function measureRound(
  target: SocketServer,
  tally: Tally,
  log: EventLog,
  ref: ConversationRef,
  options: RoundOptions,
): Promise<void> {
  const expected = options.subscribers * options.events;
  const latencies = new Float64Array(expected);
  let received = 0;
  let recording = false;
  // kept cheap on purpose (the clients share the bench's one thread): the head and the marker only
  const onMessage = (data: Buffer): void => {
    const at = now();
    if (!recording) return;
    const marker = data.indexOf(MARKER);
    if (marker < 0) return;
    if (target.authFrame !== undefined && !EVENT_HEAD.test(data.toString('latin1', 0, 32))) return;
    const sent = Number.parseFloat(data.toString('latin1', marker + MARKER.length, marker + MARKER.length + 24));
    if (received < expected) latencies[received] = at - sent;
    received += 1;
  };
  const tail = await log.tail(ref);
  const connectStarted = performance.now();
  const urls = Array.from({ length: options.subscribers }, () => target.socketUrl(ref.conversation, tail.lastSeq));
  const sockets = await openSockets(target, urls, onMessage);
  tally.connectSeconds.push((performance.now() - connectStarted) / 1_000);
  try {
    const message = (text: string) =>
      draftEvent({ ...ref, source: 'agent' }, 'message', { role: 'assistant', content: [{ type: 'text', text }] });
    for (let index = 0; index < options.warmUp; index += 1) {
      await appendWithRetry(log, ref, () => [message(`warm-up ${index}`)]);
      await delay(options.intervalMs);
    }
    await delay(500);
    recording = true;
    const serverCpuBefore = await cpuSeconds(target.pid);
    const benchCpuBefore = process.cpuUsage();
    const started = performance.now();
    for (let index = 0; index < options.events; index += 1) {
      await delay(started + index * options.intervalMs - performance.now());
      await appendWithRetry(log, ref, () => [
        message(`${MARKER}${now().toFixed(3)}; event ${index} of the fan-out benchmark.`),
      ]);
    }
    const deadline = performance.now() + 10_000;
    while (received < expected && performance.now() < deadline) await delay(20);
    recording = false;
    tally.serverCpuSeconds += (await cpuSeconds(target.pid)) - serverCpuBefore;
    const benchCpu = process.cpuUsage(benchCpuBefore);
    tally.benchCpuSeconds += (benchCpu.user + benchCpu.system) / 1e6;
    const recorded = Array.from(latencies.subarray(0, Math.min(received, expected)));
    for (const latency of recorded) tally.latencies.push(latency);
    tally.roundP99.push(percentile(recorded, 99));
    tally.received += received;
    tally.expected += expected;
    tally.events += options.events;
  } finally {
    await closeSockets(sockets);
  }
}

function msText(value: number): string {
  return `${value.toFixed(1)} ms`;
}
