import { CONDENSER_QUEUE, ConversationCache, runService } from '@flotilla/runtime';
import { loadSecretsKey, SecretReader } from '@flotilla/secrets';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import {
  checkModelAccess,
  ConversationAgents,
  createCondenseHandler,
  fallbackReporter,
  loadAgentCatalog,
} from '@flotilla/workers';

await runService({
  service: 'condenser',
  // not the log's commits: the wake-ups step workers put for conversations waiting for a
  // condensation or owed a title (CondenserWaker); each is decided from the log at its tail
  queue: CONDENSER_QUEUE,
  defaults: { concurrency: 32 },
  async start({ config, nc, log, interrupts, logger, metrics }) {
    const catalog = loadAgentCatalog();
    // a deployment model whose key is nowhere stops the condenser here, naming the variable
    checkModelAccess(catalog);
    // the summaries and titles are written by each conversation's own model, whose key may be a secret
    const secretsKey = loadSecretsKey();
    const secrets = secretsKey
      ? await SecretReader.open(nc, { key: secretsKey, replicas: config.storage.replicas })
      : undefined;
    await secrets?.follow();
    const tools = new ToolRegistry(createBuiltinTools());
    const agents = new ConversationAgents({
      catalog,
      registry: tools,
      ...(secrets ? { secrets } : {}),
      onFallback: fallbackReporter(metrics, logger),
    });
    logger.info(
      {
        model: catalog.defaultSpec.llm.model,
        condenser: catalog.defaultSpec.condenser,
        secrets: secrets !== undefined,
      },
      "condenser settings (each conversation's spec is in its log)",
    );
    return {
      handler: createCondenseHandler({ log, cache: new ConversationCache(log, 200), agents, interrupts }),
      stop: async () => {
        secrets?.close();
        await tools.close();
      },
    };
  },
});
