import type { JetStreamManager } from '@nats-io/jetstream';
import { Gauge, type Registry } from 'prom-client';

export type SinkLagOptions = {
  readonly jsm: JetStreamManager;
  readonly stream: string;
  readonly consumer: string;
  readonly subjectPrefix: string;
  readonly registry: Registry;
  readonly intervalMs: number;
  readonly onError?: (error: unknown) => void;
};

export type SinkLag = { readonly lagSeconds: () => number; readonly pending: () => number; stop(): void };

/**
 * The sink's lag, measured on the group's consumer (so it holds for every instance together):
 * `flotilla_sink_pending`, commits not yet written and acknowledged (pending plus in flight), and
 * `flotilla_sink_lag_seconds`, how long the oldest of them has been in the stream (0 when none is).
 */
export function startSinkLag(options: SinkLagOptions): SinkLag {
  let lag = 0;
  let pending = 0;
  const lagGauge = new Gauge({
    name: 'flotilla_sink_lag_seconds',
    help: 'Age of the oldest commit the sink has not written yet (0 when caught up)',
    registers: [options.registry],
  });
  const pendingGauge = new Gauge({
    name: 'flotilla_sink_pending',
    help: 'Commits in the stream the sink has not written and acknowledged yet',
    registers: [options.registry],
  });
  const measure = async (): Promise<void> => {
    const info = await options.jsm.consumers.info(options.stream, options.consumer);
    pending = info.num_pending + info.num_ack_pending;
    if (pending === 0) lag = 0;
    else {
      // the first commit after the ack floor is the oldest one not written yet
      const oldest = await options.jsm.direct.getMessage(options.stream, {
        seq: info.ack_floor.stream_seq + 1,
        next_by_subj: `${options.subjectPrefix}.>`,
      });
      lag = oldest ? Math.max(0, (Date.now() - oldest.time.getTime()) / 1_000) : 0;
    }
    lagGauge.set(lag);
    pendingGauge.set(pending);
  };
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    measure()
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => (running = false));
  }, options.intervalMs);
  timer.unref();
  return { lagSeconds: () => lag, pending: () => pending, stop: () => clearInterval(timer) };
}
