import { parseConversationCheckpoint, stuckStepsNeeded, type ConversationCheckpoint } from '@flotilla/agent';
import type { LanguageModel, LlmConfig } from '@flotilla/llm';
import {
  CheckpointStore,
  CONDENSER_QUEUE,
  CondenserWakeupReason,
  CondenserWakeups,
  ConversationCache,
  ensureCondenserWakeups,
  ImageStore,
  loadTenantBudgets,
  runService,
  TenantBudgetGuard,
  TenantUsageStore,
  type Logger,
} from '@flotilla/runtime';
import { loadSecretsKey, SecretReader } from '@flotilla/secrets';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import type { EventLog } from '@flotilla/log';
import {
  checkModelAccess,
  CondensationWaits,
  ConversationAgents,
  createStepHandler,
  fallbackReporter,
  loadAgentCatalog,
  serveQuestions,
  type OverdueWait,
} from '@flotilla/workers';
import { JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';

export type StepWorkerOptions = {
  /**
   * Builds a model the steps call, from its full configuration (key included), once per endpoint
   * and key. Default: the provider's client. Benchmarks pass an in-process scripted model to
   * measure the runtime alone.
   */
  readonly model?: (config: LlmConfig) => LanguageModel;
};

/** Runs the step-worker service until it is told to stop. */
export async function runStepWorker(options: StepWorkerOptions = {}): Promise<void> {
  await runService({
    service: 'step-worker',
    // a step mostly waits on the model: in-flight steps, not CPU, bound a worker's throughput
    // and what waits for a slot is served fairly across tenants: a flood's backlog held here, up to 10,000 commits
    defaults: { concurrency: 1024, lookahead: 10_000 },
    async start({ config, log, js, jsm, nc, interrupts, metrics, logger, untilAvailable }) {
      const catalog = loadAgentCatalog();
      // the tenants' budgets: with them, each step's usage is counted and a tenant past its budget has its runs stopped
      const tenantBudgets = loadTenantBudgets();
      const budgets = tenantBudgets
        ? new TenantBudgetGuard(tenantBudgets, await TenantUsageStore.open(nc, { replicas: config.storage.replicas }), {
            onError: (error, tenant) =>
              logger.warn({ err: error, tenant }, "a step's usage could not be counted toward its tenant's budget"),
          })
        : undefined;
      // a deployment model whose key is nowhere stops the worker here, naming the variable (a model of the steps' own, in a benchmark, needs none)
      if (!options.model) checkModelAccess(catalog);
      // the condenser is woken through its queue (CondenserWaker), not by the log's commits
      const ensureWakeups = () => ensureCondenserWakeups(jsm, config.storage.replicas);
      await untilAvailable('the condenser wake-ups stream', ensureWakeups);
      const wakeups = new CondenserWakeups(js, ensureWakeups);
      const warnAfterMs = config.condensationWarnMs;
      const condensationWaits = new CondensationWaits({ warnAfterMs });
      let sweeping = false;
      const sweep = setInterval(
        () => {
          if (sweeping) return;
          sweeping = true;
          void checkCondensationWaits(condensationWaits, log, jsm, wakeups, logger)
            .catch((error: unknown) =>
              logger.debug({ err: error }, 'checking condensation waits failed; next sweep retries'),
            )
            .finally(() => {
              const report = condensationWaits.report();
              metrics.condensationWaiting.set(report.waiting);
              metrics.condensationOldestWaitSeconds.set(report.oldestMs / 1_000);
              sweeping = false;
            });
        },
        Math.min(10_000, warnAfterMs / 2),
      );
      sweep.unref();
      // a conversation that is not cached is loaded from its view checkpoint (the projector writes them)
      const checkpoints = await CheckpointStore.open(nc, {
        parse: parseConversationCheckpoint,
        replicas: config.storage.replicas,
        onCorrupt: (report) =>
          logger.warn({ report }, 'unreadable view checkpoint: loading the conversation from its whole log'),
      });
      // model keys given as secrets are read here; the values stay encrypted in memory until a model needs one
      const secretsKey = loadSecretsKey();
      const secrets = secretsKey
        ? await SecretReader.open(nc, { key: secretsKey, replicas: config.storage.replicas })
        : undefined;
      await secrets?.follow();
      // tools are only described here (schemas for the model); tool runners execute them
      const tools = new ToolRegistry(createBuiltinTools());
      // the images of user messages, read in where the model is called (the log names them)
      const images = await ImageStore.open(nc, { replicas: config.storage.replicas });
      const agents = new ConversationAgents({
        catalog,
        registry: tools,
        images,
        ...(secrets ? { secrets } : {}),
        ...(options.model ? { createModel: options.model } : {}),
        onFallback: fallbackReporter(metrics, logger),
      });
      const cache = new ConversationCache<ConversationCheckpoint>(
        log,
        config.cacheConversations,
        config.cacheEvents,
        undefined,
        {
          checkpoints: {
            store: checkpoints,
            // stuck detection past what a checkpoint's reader reads before it needs the whole log
            accept: (checkpoint) => {
              const lookup = agents.of(checkpoint.state.spec);
              if (!lookup.ok) return true; // the step ends the run, saying why, from either
              const { stuckDetection } = lookup.agent.config;
              return !stuckDetection.enabled || checkpoint.state.stuck_steps >= stuckStepsNeeded(stuckDetection);
            },
            onUnused: (reason) => logger.debug({ reason }, 'view checkpoint not used'),
          },
          onColdLoad: (source) => metrics.coldLoads.inc({ source }),
        },
      );
      // side questions (POST …/ask): answered from a conversation's view with its model, nothing appended
      const questions = serveQuestions({
        nc,
        log,
        agents,
        onError: (error) => logger.warn({ err: error }, 'answering a side question failed'),
      });
      const { llm, tools: offered } = catalog.defaultSpec;
      logger.info(
        {
          model: llm.model,
          provider: llm.provider,
          tools: offered,
          profiles: catalog.profiles().length,
          templates: catalog.templateNames().length,
          secrets: secrets !== undefined,
        },
        "agent catalog (each conversation's spec is in its log)",
      );
      return {
        handler: createStepHandler({
          log,
          cache,
          agents,
          interrupts,
          nc,
          metrics,
          condensationWaits,
          condenser: wakeups,
          ...(budgets ? { budgets } : {}),
        }),
        stop: async () => {
          clearInterval(sweep);
          questions.unsubscribe();
          secrets?.close();
          await tools.close();
        },
      };
    },
  });
}

/**
 * Checks the waits past their threshold against the log: one whose conversation moved on was
 * answered (perhaps to another instance) and is dropped; one still at its request is real: it is
 * logged once, saying whether a condenser group exists at all, and its condenser is woken again
 * (a wake-up the queue lost, or one put before this version woke condensers through it).
 */
async function checkCondensationWaits(
  waits: CondensationWaits,
  log: EventLog,
  jsm: JetStreamManager,
  wakeups: CondenserWakeups,
  logger: Logger,
): Promise<void> {
  const confirmed: OverdueWait[] = [];
  for (const wait of waits.overdue()) {
    if ((await log.lastStreamSeq(wait.ref)) > wait.streamSeq) waits.settled(wait.ref);
    else if (waits.confirm(wait.ref)) confirmed.push(wait);
  }
  if (confirmed.length === 0) return;
  for (const { ref, streamSeq } of confirmed)
    await wakeups.wake(ref, CondenserWakeupReason.Condense, streamSeq, { again: true });
  const group = await condenserGroup(jsm);
  for (const { ref, waitedMs } of confirmed) {
    logger.warn(
      {
        conversation: ref.conversation,
        tenant: ref.tenant,
        waitedSeconds: Math.round(waitedMs / 1_000),
        condenserGroup: group,
      },
      group === 'missing'
        ? "a conversation waits for a condensation, and no condenser group exists on the condenser's wake-up queue: start the condenser service"
        : 'a conversation has waited long for a condensation (its condenser was woken again): is a condenser service running?',
    );
  }
}

const CONSUMER_NOT_FOUND = 10014;

/** Whether the condenser's durable consumer exists on its wake-up queue ('unknown' when the server cannot say now). */
async function condenserGroup(jsm: JetStreamManager): Promise<'present' | 'missing' | 'unknown'> {
  try {
    await jsm.consumers.info(CONDENSER_QUEUE.stream, 'condenser');
    return 'present';
  } catch (error) {
    return error instanceof JetStreamApiError && error.code === CONSUMER_NOT_FOUND ? 'missing' : 'unknown';
  }
}
