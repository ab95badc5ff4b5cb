import { createServer } from 'node:http';
import { BusVariables, connectionOptions, loadBusSettings } from '@flotilla/bus';
import { connect } from '@nats-io/transport-node';
import { WebSocketServer } from 'ws';

/**
 * The floor of NATS → WebSocket fan-out, run as its own process by the gateway benchmarks: a
 * bare `ws` server with one core NATS subscription whose every message payload goes out, as
 * is, to every connected client. No auth, no log, no JetStream consumer: each client gets a
 * `{"type":"live"}` frame on connect and then the raw payloads.
 *
 * Environment: BENCH_NATS_URL, BENCH_SUBJECT (may hold wildcards), BENCH_PORT; against a server
 * that refuses anonymous clients, the admin's credential as a service takes one
 * (FLOTILLA_NATS_USER and FLOTILLA_NATS_PASSWORD_FILE, or an nkey or .creds file).
 * `GET /ready` answers 200 once the subscription is in place.
 */
const natsUrl = required('BENCH_NATS_URL');
const subject = required('BENCH_SUBJECT');
const port = Number(required('BENCH_PORT'));

const bus = loadBusSettings({ ...process.env, [BusVariables.url]: natsUrl });
const nc = await connect(connectionOptions(bus, { name: 'ws-baseline', identity: 'admin' }));
const http = createServer((request, response) => {
  response.writeHead(request.url === '/ready' ? 200 : 404).end();
});
const wss = new WebSocketServer({ server: http });
const LIVE = JSON.stringify({ type: 'live' });
wss.on('connection', (socket) => socket.send(LIVE));
nc.subscribe(subject, {
  callback: (_error, message) => {
    // the payload bytes once, sent as a text frame to each client (no per-socket conversion)
    for (const client of wss.clients) client.send(message.data, { binary: false });
  },
});
await nc.flush();
http.listen(port, '127.0.0.1');

const stop = async (): Promise<void> => {
  for (const client of wss.clients) client.terminate();
  wss.close();
  http.close();
  await nc.close();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set (the benchmark that spawns this server sets it)`);
  return value;
}
