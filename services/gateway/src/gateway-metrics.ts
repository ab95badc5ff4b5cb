import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { SocketHub } from './socket-hub.js';

export type GatewayMetrics = ReturnType<typeof gatewayMetrics>;

/** The gateway's Prometheus metrics (`/metrics`): requests and their latency, sockets and feeds, schedules' runs. */
export function gatewayMetrics(hub: SocketHub) {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'gateway' });
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'flotilla_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'flotilla_http_request_seconds',
    help: 'HTTP request latency',
    labelNames: ['route', 'method'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [registry],
  });
  new Gauge({
    name: 'flotilla_ws_sockets',
    help: 'Open event sockets',
    registers: [registry],
    collect() {
      this.set(hub.sockets);
    },
  });
  new Gauge({
    name: 'flotilla_ws_feeds',
    help: 'Conversations with a live feed on this gateway',
    registers: [registry],
    collect() {
      this.set(hub.conversations);
    },
  });
  const scheduleRuns = new Counter({
    name: 'flotilla_schedule_runs_total',
    help: "Schedules' runs this gateway took, by outcome (succeeded, failed, skipped, dropped)",
    labelNames: ['outcome'],
    registers: [registry],
  });
  return { registry, requests, latency, scheduleRuns };
}
