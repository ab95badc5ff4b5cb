import { createLanguageModel, type LanguageModel } from '@flotilla/llm';
import { ConversationCache, runService } from '@flotilla/runtime';
import { createCondenseHandler, loadAgentSettings } from '@flotilla/workers';

await runService({
  service: 'condenser',
  defaults: { concurrency: 32 },
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
