import { SecretName, SpecName } from '@flotilla/events';
import { LlmConfig } from '@flotilla/llm';
import type { z } from 'zod';

/**
 * A spec's model: the model endpoint's settings, never its key. The key comes from the operator's
 * model profile the spec was made from (`profile`), or from a secret of the conversation or its
 * tenant (`apiKeySecret`), or there is none (a local server that takes any).
 */
export const SpecModel = LlmConfig.omit({ apiKey: true, apiKeyEnv: true })
  .extend({
    /** The operator's model profile this model is: its key is the profile's, read where the model is called. */
    profile: SpecName.optional(),
    /** The secret (of the conversation, else of its tenant) holding the key. */
    apiKeySecret: SecretName.optional(),
  })
  .refine((model) => model.profile === undefined || model.apiKeySecret === undefined, {
    message: "a profile's model uses the profile's key: give a profile or an apiKeySecret, not both",
    path: ['apiKeySecret'],
  });
export type SpecModel = z.infer<typeof SpecModel>;
