import { runStepWorker } from '@flotilla/step-worker';
import { brainModel } from './brain-model.js';

// The step-worker service as it ships, on the brain's replies in its own process: no HTTP, the task's latency
await runStepWorker({ model: () => brainModel() });
