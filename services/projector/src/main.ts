import { parseConversationCheckpoint } from '@flotilla/agent';
import { CheckpointStore, runService, servePurges } from '@flotilla/runtime';
import { SnapshotStore } from '@flotilla/state';
import { CheckpointWriter, createProjectHandler, withCheckpoints } from '@flotilla/workers';

await runService({
  service: 'projector',
  // a conversation's newest commit holds its slot while it settles (createProjectHandler); the
  // snapshot trails the log by its settle period anyway, so commits come in batches (BatchedPull)
  defaults: { concurrency: 256, pullIntervalMs: 10 },
  async start({ config, log, nc, logger }) {
    const store = await SnapshotStore.open(nc, {
      replicas: config.storage.replicas,
      onCorrupt: (report) => logger.warn({ report }, 'corrupt snapshot: rebuilding it from the log'),
    });
    // the other read model: each conversation's view at its last condensation (docs/architecture.md)
    const checkpoints = await CheckpointStore.open(nc, {
      parse: parseConversationCheckpoint,
      replicas: config.storage.replicas,
      onCorrupt: (report) => logger.warn({ report }, 'unreadable view checkpoint: the next one replaces it'),
    });
    // the gateway's deletes: this service's credential is the only one that may purge
    const purges = servePurges(nc, log, logger, { alsoRemove: (ref) => checkpoints.delete(ref) });
    const project = createProjectHandler(log, store, { settleMs: config.projectorSettleMs });
    return {
      handler: withCheckpoints(project, new CheckpointWriter(log, checkpoints)),
      stop: async () => purges.unsubscribe(),
    };
  },
});
