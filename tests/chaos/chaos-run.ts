import { auditConversation, formatReport } from '@flotilla/auditor';
import { INTERRUPTED_MESSAGE } from '@flotilla/agent';
import type { ConversationRef } from '@flotilla/log';
import { basicViolations, effectCounts } from '../support/log-checks.js';
import { startTestSystem } from '../support/system.js';

export type ChaosOptions = {
  /** How long the driver keeps killing processes. */
  readonly durationMs: number;
  readonly conversations: number;
  readonly steps: number;
  /** Seconds each action sleeps before its side effect. */
  readonly actionSeconds: number;
  /** A random service process is SIGKILLed every this many ms (± 50 %). */
  readonly killEveryMs: number;
  readonly stepWorkers?: number;
  readonly toolRunners?: number;
  readonly log?: (line: string) => void;
};

export type ChaosResult = {
  readonly conversations: number;
  readonly finished: number;
  readonly kills: Readonly<Record<string, number>>;
  readonly actions: number;
  readonly interrupted: number;
  readonly takeovers: number;
  /** Condensations the condenser appended (long runs ask for them). */
  readonly condensations: number;
  /** Effects that ran more than once (must be empty). */
  readonly duplicatedEffects: readonly string[];
  /** Completed actions whose effect is missing (must be empty). */
  readonly missingEffects: readonly string[];
  readonly auditFailures: readonly string[];
  readonly elapsedMs: number;
};

/**
 * Runs conversations while SIGKILLing random service processes, then checks that every
 * conversation finished, every log passes the auditor, and no action's side effect happened twice.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const started = Date.now();
  const say = options.log ?? (() => undefined);
  // a condenser too: long conversations ask for condensations, and it is killed like the others
  await using system = await startTestSystem({
    stepWorkers: options.stepWorkers ?? 2,
    toolRunners: options.toolRunners ?? 2,
    condensers: 1,
  });
  const refs: ConversationRef[] = Array.from({ length: options.conversations }, (_, index) => ({
    tenant: `t${index % 4}`,
    conversation: `chaos-${index}`,
  }));
  await Promise.all(
    refs.map((ref) => system.start(ref, { id: ref.conversation, steps: options.steps, sleep: options.actionSeconds })),
  );
  say(`started ${refs.length} conversations of ${options.steps} steps`);

  const kills: Record<string, number> = {};
  const victims = system.processes;
  const deadline = Date.now() + options.durationMs;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, options.killEveryMs * (0.5 + Math.random())));
    const victim = victims[Math.floor(Math.random() * victims.length)]!;
    if (!victim.running) continue;
    const service = victim.name.replace(/-\d+$/, '');
    kills[service] = (kills[service] ?? 0) + 1;
    say(`SIGKILL ${victim.name} (pid ${victim.pid})`);
    await victim.kill('SIGKILL');
  }
  say('chaos over; waiting for every conversation to finish');
  try {
    await system.waitForStatus(refs, ['finished', 'error', 'stuck'], 180_000);
  } catch (error) {
    // say how far the unfinished ones got: slow progress and a stall look alike from the status
    for (const ref of refs.slice(0, 10)) {
      const events = await system.events(ref);
      const steps = events.filter((event) => event.type === 'action').length;
      const last = events.slice(-3).map((event) => `${event.type}@${event.timestamp}`);
      say(`${ref.conversation}: ${steps} of ${options.steps} actions; last events ${last.join(', ')}`);
    }
    throw error;
  }

  const effects = await effectCounts(await system.readEffects());
  const duplicatedEffects = [...effects].filter(([, count]) => count > 1).map(([line]) => line);
  const missingEffects: string[] = [];
  const auditFailures: string[] = [];
  let finished = 0;
  let actions = 0;
  let interrupted = 0;
  let takeovers = 0;
  let condensations = 0;
  for (const ref of refs) {
    const events = await system.events(ref);
    if ((await system.status(ref)) === 'finished') finished += 1;
    const problems = basicViolations(events);
    const report = await auditConversation(system.log, ref);
    if (problems.length > 0 || report.violations.length > 0)
      auditFailures.push(`${ref.conversation}: ${problems.join('; ')} ${formatReport(report)}`);
    for (const event of events) {
      if (event.type === 'action' && event.input !== null) {
        actions += 1;
        const command = String(event.input['command'] ?? '');
        const line = /echo "([^"]+)"/.exec(command)?.[1];
        const result = events.find(
          (other) =>
            (other.type === 'observation' || other.type === 'agent_error') && other.tool_call_id === event.tool_call_id,
        );
        if (result?.type === 'observation' && line && (effects.get(line) ?? 0) !== 1 && !result.is_error)
          missingEffects.push(line);
      }
      if (event.type === 'agent_error' && event.error === INTERRUPTED_MESSAGE) interrupted += 1;
      if (event.type === 'condensation') condensations += 1;
      if (
        event.type === 'observation' &&
        event.content.some(
          (part) => part.type === 'text' && part.text.includes('workspace moved to another tool runner'),
        )
      )
        takeovers += 1;
    }
  }
  return {
    conversations: refs.length,
    finished,
    kills,
    actions,
    interrupted,
    takeovers,
    condensations,
    duplicatedEffects,
    missingEffects,
    auditFailures,
    elapsedMs: Date.now() - started,
  };
}
