import { SecretName, SpecName } from '@flotilla/events';
import { LlmConfig } from '@flotilla/llm';
import { z } from 'zod';

/** Fallbacks one model may have, at most: each is tried after the one before it has spent its retries. */
export const MAX_FALLBACKS = 8;

const ModelEndpoint = LlmConfig.omit({ apiKey: true, apiKeyEnv: true }).extend({
  /** The operator's model profile this model is: its key is the profile's, read where the model is called. */
  profile: SpecName.optional(),
  /** The secret (of the conversation, else of its tenant) holding the key. */
  apiKeySecret: SecretName.optional(),
});

const hasOneKeySource = (model: {
  readonly profile?: string | undefined;
  readonly apiKeySecret?: string | undefined;
}): boolean => model.profile === undefined || model.apiKeySecret === undefined;
const ONE_KEY_SOURCE = {
  message: "a profile's model uses the profile's key: give a profile or an apiKeySecret, not both",
  path: ['apiKeySecret'],
};

/**
 * A model a spec's model falls back on when its provider is out: a model as the spec's own is, but
 * with no fallbacks of its own (a fallback's are never followed: the spec's list is the chain).
 */
export const SpecFallback = ModelEndpoint.refine(hasOneKeySource, ONE_KEY_SOURCE);
export type SpecFallback = z.infer<typeof SpecFallback>;

/**
 * A spec's model: the model endpoint's settings, never its key. The key comes from the operator's
 * model profile the spec was made from (`profile`), or from a secret of the conversation or its
 * tenant (`apiKeySecret`), or there is none (a local server that takes any). `fallbacks`, in
 * order, make a call its provider cannot (an outage: 5xx, 429, a timeout, a broken connection, no
 * quota) once its retries are spent; the step's `llm_usage` names the one that made it.
 */
export const SpecModel = ModelEndpoint.extend({
  fallbacks: z.array(SpecFallback).min(1).max(MAX_FALLBACKS).optional(),
}).refine(hasOneKeySource, ONE_KEY_SOURCE);
export type SpecModel = z.infer<typeof SpecModel>;

/** The configuration a model of a spec (or one of its fallbacks) is called with: its settings, without where its key comes from or what it falls back on. */
export function llmConfigOf(model: SpecModel): LlmConfig {
  const { profile: _profile, apiKeySecret: _secret, fallbacks: _fallbacks, ...config } = model;
  return config;
}
