import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { AuditRule } from './audit-rule.js';

/** What a following auditor exports on /metrics. */
export class AuditMetrics {
  readonly registry = new Registry();
  readonly violations: Counter<'rule'>;
  readonly conversations: Gauge;
  readonly commits: Counter;
  readonly strays: Counter;
  readonly lagMessages: Gauge;
  readonly lagSeconds: Gauge;
  readonly restarts: Counter;

  constructor() {
    this.registry.setDefaultLabels({ service: 'auditor' });
    collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    this.violations = new Counter({
      name: 'flotilla_audit_violations_total',
      help: 'Invariant violations found, by rule (libs/auditor/src/audit-rule.ts)',
      labelNames: ['rule'],
      registers,
    });
    this.conversations = new Gauge({
      name: 'flotilla_audit_conversations',
      help: 'Conversations audited since the auditor started',
      registers,
    });
    this.commits = new Counter({ name: 'flotilla_audit_commits_total', help: 'Commits audited', registers });
    this.strays = new Counter({
      name: 'flotilla_audit_stray_messages_total',
      help: 'Messages on the stream on a subject that names no conversation',
      registers,
    });
    this.lagMessages = new Gauge({
      name: 'flotilla_audit_lag_messages',
      help: 'Messages stored after the last one audited, when it was read',
      registers,
    });
    this.lagSeconds = new Gauge({
      name: 'flotilla_audit_lag_seconds',
      help: 'Age of the last message audited when it was read, while more were pending (0 when caught up)',
      registers,
    });
    this.restarts = new Counter({
      name: 'flotilla_audit_read_retries_total',
      help: 'Times reading the stream failed and was tried again (NATS away, a server restart)',
      registers,
    });
  }

  /** Every rule at 0, so a dashboard sees a series before the first violation. */
  initialise(rules: readonly AuditRule[]): void {
    for (const rule of rules) this.violations.inc({ rule }, 0);
  }
}
