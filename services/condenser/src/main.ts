import { createLanguageModel, type LanguageModel } from '@flotilla/llm';
import { ConversationCache, runService } from '@flotilla/runtime';
import { createCondenseHandler, loadAgentSettings } from '@flotilla/workers';

await runService({
  service: 'condenser',
  // a condensation takes a model call: commits pulled in batches cost less and delay it little (BatchedPull)
  defaults: { concurrency: 32, pullIntervalMs: 10 },
  async start({ log, interrupts, logger }) {
    const agent = loadAgentSettings();
    let llm: LanguageModel | undefined;
    logger.info({ model: agent.llm.model, condenser: agent.condenser }, 'condenser settings');
    return {
      handler: createCondenseHandler({
        log,
        cache: new ConversationCache(log, 200),
        agent,
        llm: () => (llm ??= createLanguageModel(agent.llm)),
        interrupts,
      }),
    };
  },
});
