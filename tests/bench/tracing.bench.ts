import { draftEvent } from '@flotilla/events';
import { EMPTY_TAIL, EventLog, type Tail } from '@flotilla/log';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { activeTraceparent, inSpan, tracingEnabled } from '@flotilla/tracing';
import { recordSpans } from '@flotilla/tracing/testing';
import { connect } from '@nats-io/transport-node';
import { median, ms, table } from './stats.js';

/**
 * What tracing costs. Off (no OTEL_EXPORTER_OTLP_ENDPOINT, the default): the instrumented calls
 * on every hot path — the traceparent an append asks for, a handler's span around its work — timed
 * per call, and set against a log append's latency on a nats-server of the benchmark's own
 * (the ratio is the share of an append they would add). On: the same appends, each inside a span
 * recorded by the SDK (an in-memory exporter: the SDK's own cost, without a collector's network).
 */
export async function benchTracing(appends = 2_000, calls = 1_000_000): Promise<string> {
  if (tracingEnabled()) throw new Error('the tracing benchmark needs a process that does not trace yet');
  const perCall = (run: () => void, count: number): number => {
    for (let index = 0; index < Math.min(count, 10_000); index += 1) run();
    const started = process.hrtime.bigint();
    for (let index = 0; index < count; index += 1) run();
    return Number(process.hrtime.bigint() - started) / count;
  };
  const headers = { get: () => '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
  const work = async (): Promise<number> => 1;
  const perAsyncCall = async (run: () => Promise<unknown>, count: number): Promise<number> => {
    for (let index = 0; index < 10_000; index += 1) await run();
    const started = process.hrtime.bigint();
    for (let index = 0; index < count; index += 1) await run();
    return Number(process.hrtime.bigint() - started) / count;
  };
  const traceparentNs = perCall(() => void activeTraceparent(), calls);
  const bareNs = await perAsyncCall(work, calls / 10);
  const wrappedNs = await perAsyncCall(
    () => inSpan('step', { parent: headers, attributes: { 'flotilla.tenant': 'bench' } }, work),
    calls / 10,
  );

  await using server = await NatsServerProcess.start();
  const nc = await connect({ servers: server.url });
  try {
    const log = await EventLog.open(nc, { streamName: 'BENCH_TRACING', subjectPrefix: 'bench.tracing' });
    const run = async (conversation: string, traced: boolean): Promise<number[]> => {
      const ref = { tenant: 'bench', conversation };
      const times: number[] = [];
      let tail: Tail = EMPTY_TAIL;
      for (let index = 0; index < appends; index += 1) {
        const drafts = [
          draftEvent({ ...ref, source: 'user' }, 'message', {
            role: 'user',
            content: [{ type: 'text', text: `message ${index}` }],
          }),
        ];
        const started = performance.now();
        const append = () => log.append(ref, drafts, { expected: tail });
        const commit = traced ? await inSpan('request', {}, append) : await append();
        times.push(performance.now() - started);
        tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
      }
      return times.slice(100);
    };
    const off = median(await run('off', false));
    let on: number;
    {
      await using recorder = await recordSpans('bench');
      on = median(await run('on', true));
      if (recorder.spans().length < appends) throw new Error('tracing on recorded fewer spans than appends');
    }
    const offShare = traceparentNs / (off * 1e6);
    const spanShare = (wrappedNs - bareNs) / (off * 1e6);
    return table([
      ['measure', 'value'],
      ['tracing off: activeTraceparent() per append', `${traceparentNs.toFixed(1)} ns`],
      [
        'tracing off: an awaited async call, bare / inside inSpan',
        `${bareNs.toFixed(1)} ns / ${wrappedNs.toFixed(1)} ns`,
      ],
      ['log append, median (tracing off)', ms(off)],
      ['tracing off, share of an append: the traceparent check', `${(offShare * 100).toFixed(4)} %`],
      [
        'tracing off, a handler span (once per step) over a bare call, share of an append',
        `${(spanShare * 100).toFixed(4)} % (below 0: noise)`,
      ],
      ['log append, median, inside a recorded span (tracing on)', ms(on)],
      ['tracing on / off, per append', `${(on / off).toFixed(3)}×`],
    ]);
  } finally {
    await nc.close();
  }
}
