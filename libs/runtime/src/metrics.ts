import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The Prometheus metrics every service exposes on /metrics. */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly commits: Counter<'outcome'>;
  readonly deliveries: Counter<'consumer'>;
  readonly handleSeconds: Histogram<'outcome'>;
  readonly appends: Counter<'result'>;
  readonly inFlight: Gauge;
  readonly heapReleases: Counter;
  readonly llmSeconds: Histogram<'outcome'>;
  readonly llmFallbacks: Counter<'from' | 'to' | 'reason'>;
  readonly toolSeconds: Histogram<'tool' | 'outcome'>;
  readonly condensationWaiting: Gauge;
  readonly condensationOldestWaitSeconds: Gauge;
  readonly coldLoads: Counter<'source'>;
  readonly slotWaitSeconds: Histogram<'share'>;
  readonly waiting: Gauge;

  constructor(service: string) {
    this.registry.setDefaultLabels({ service });
    collectDefaultMetrics({ register: this.registry });
    this.commits = new Counter({
      name: 'flotilla_commits_handled_total',
      help: 'Delivered commits handled, by outcome',
      labelNames: ['outcome'],
      registers: [this.registry],
    });
    this.deliveries = new Counter({
      name: 'flotilla_deliveries_total',
      help: "Commits delivered to this instance, by consumer (a partitioned group's partition consumers: which partitions it holds)",
      labelNames: ['consumer'],
      registers: [this.registry],
    });
    this.slotWaitSeconds = new Histogram({
      name: 'flotilla_slot_wait_seconds',
      help: "Time a delivered commit waited in this instance for a slot, by whether its tenant was within its share of the slots (docs/architecture.md, 'Tenant fairness')",
      labelNames: ['share'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
      registers: [this.registry],
    });
    this.waiting = new Gauge({
      name: 'flotilla_commits_waiting',
      help: 'Delivered commits waiting in this instance for a slot (its lookahead)',
      registers: [this.registry],
    });
    this.handleSeconds = new Histogram({
      name: 'flotilla_commit_handle_seconds',
      help: 'Time to handle one delivered commit',
      labelNames: ['outcome'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
      registers: [this.registry],
    });
    this.appends = new Counter({
      name: 'flotilla_appends_total',
      help: 'Appends to the event log, by result',
      labelNames: ['result'],
      registers: [this.registry],
    });
    this.inFlight = new Gauge({
      name: 'flotilla_in_flight',
      help: 'Commits being handled now',
      registers: [this.registry],
    });
    this.heapReleases = new Counter({
      name: 'flotilla_heap_releases_total',
      help: 'Full collections run to give the heap back after a burst (two per release)',
      registers: [this.registry],
    });
    this.llmSeconds = new Histogram({
      name: 'flotilla_llm_call_seconds',
      help: 'LLM call latency',
      labelNames: ['outcome'],
      buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers: [this.registry],
    });
    this.llmFallbacks = new Counter({
      name: 'flotilla_llm_fallbacks_total',
      help: "Model calls moved to a fallback after the provider of the model before it was out, by profile moved from and to (own: a model of a spec's own) and the failure's code (transient, rate_limit, timeout, quota)",
      labelNames: ['from', 'to', 'reason'],
      registers: [this.registry],
    });
    this.toolSeconds = new Histogram({
      name: 'flotilla_tool_seconds',
      help: 'Tool execution latency',
      labelNames: ['tool', 'outcome'],
      buckets: [0.01, 0.1, 0.5, 1, 5, 30, 120, 600],
      registers: [this.registry],
    });
    this.condensationWaiting = new Gauge({
      name: 'flotilla_condensation_waiting',
      help: 'Step worker: conversations waiting for a condensation (only the condenser service writes one)',
      registers: [this.registry],
    });
    this.condensationOldestWaitSeconds = new Gauge({
      name: 'flotilla_condensation_oldest_wait_seconds',
      help: 'Step worker: the longest current wait for a condensation (minutes mean no condenser is answering)',
      registers: [this.registry],
    });
    this.coldLoads = new Counter({
      name: 'flotilla_cold_loads_total',
      help: 'Conversations loaded that were not cached, by source: their view checkpoint and the log after it, or the whole log',
      labelNames: ['source'],
      registers: [this.registry],
    });
  }
}
