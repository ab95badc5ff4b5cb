import { runStepWorker } from './step-worker.js';

await runStepWorker();
