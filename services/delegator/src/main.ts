import { ConversationCache, runService } from '@flotilla/runtime';
import { Delegator } from '@flotilla/workers';

await runService({
  service: 'delegator',
  // a parent's interrupt reaches its children through this service: each commit is taken the moment it lands
  defaults: { concurrency: 64 },
  async start({ config, log, nc, metrics, logger }) {
    const delegator = new Delegator({
      log,
      cache: new ConversationCache(log, config.cacheConversations, config.cacheEvents),
      nc,
      metrics,
    });
    logger.info("delegator: sub-agents are started and answered from the logs (each child's spec from its parent's)");
    return { handler: delegator.handler() };
  },
});
