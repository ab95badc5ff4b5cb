import { registryCatalog, type AgentConfig } from '@flotilla/agent';
import { createLanguageModel, type LanguageModel } from '@flotilla/llm';
import { ConversationCache, runService } from '@flotilla/runtime';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { createStepHandler, loadAgentSettings } from '@flotilla/workers';

export type StepWorkerOptions = {
  /**
   * Builds the model the steps call, once, on the first step. Default: the one the agent settings
   * configure. Benchmarks pass an in-process scripted model to measure the runtime alone.
   */
  readonly model?: (agent: AgentConfig) => LanguageModel;
};

/** Runs the step-worker service until it is told to stop. */
export async function runStepWorker(options: StepWorkerOptions = {}): Promise<void> {
  const model = options.model ?? ((agent: AgentConfig) => createLanguageModel(agent.llm));
  await runService({
    service: 'step-worker',
    // a step mostly waits on the model: in-flight steps, not CPU, bound a worker's throughput
    defaults: { concurrency: 1024 },
    async start({ log, nc, interrupts, metrics, logger }) {
      const agent = loadAgentSettings();
      // tools are only described here (schemas for the model); tool runners execute them
      const tools = new ToolRegistry(createBuiltinTools());
      let llm: LanguageModel | undefined;
      logger.info({ model: agent.llm.model, provider: agent.llm.provider, tools: agent.tools }, 'agent settings');
      return {
        handler: createStepHandler({
          log,
          cache: new ConversationCache(log, Number(process.env['FLOTILLA_CACHE_CONVERSATIONS'] ?? 1_000)),
          agent,
          llm: () => (llm ??= model(agent)),
          tools: registryCatalog(tools, agent.tools),
          interrupts,
          nc,
          metrics,
        }),
        stop: () => tools.close(),
      };
    },
  });
}
