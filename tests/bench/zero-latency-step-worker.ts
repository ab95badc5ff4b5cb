import { ScriptedLanguageModel } from '@flotilla/llm';
import { runStepWorker } from '@flotilla/step-worker';
import { brainModelReply } from '../support/brain-model.js';

// The step worker with a zero-latency model in its own process: the brain's replies, no HTTP
await runStepWorker({ model: () => new ScriptedLanguageModel({ replies: brainModelReply, record: false, info: { model: 'brain' } }) });
