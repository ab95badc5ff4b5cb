import { defaultApiKeyVariable, type LlmConfig } from '@flotilla/llm';
import { MAX_FALLBACKS, type AgentSpec, type SpecModel } from './agent-spec.js';
import type { OperatorLimits } from './catalog-settings.js';
import { fallbackIssues } from './profile-fallbacks.js';
import { SpecRefused, type SpecIssue } from './spec-checks.js';

/** The name of the deployment's own model (the default spec's), as a profile. */
export const DEFAULT_PROFILE = 'default';

/** What a spec that names a profile may still set of its model: how it samples, never where it goes or what it costs. */
const TUNING_KEYS = [
  'temperature',
  'maxOutputTokens',
  'reasoningEffort',
  'thinkingBudgetTokens',
  'timeoutMs',
  'promptCacheKey',
] as const;

/**
 * An `llm` of tuning only (`{"temperature": 0.5}`, what `flotilla spec ID --set llm.temperature=0.5`
 * sends) tunes the model in force: its profile, or its own model, with its earlier tuning, the
 * given keys over it. Any other `llm` is a whole model (a profile or one of the spec's own).
 */
export function tunedModel(requested: unknown, current: AgentSpec['llm']): unknown {
  if (typeof requested !== 'object' || requested === null || Array.isArray(requested)) return requested;
  const keys = Object.keys(requested);
  if (keys.length === 0 || !keys.every((key) => (TUNING_KEYS as readonly string[]).includes(key))) return requested;
  return { ...requestOf(current), ...requested };
}

/**
 * A spec's model as a request names it: a profile's by its name and tuning (its settings and
 * fallbacks are the profile's, read again), a model of the spec's own whole, its fallbacks each
 * named so.
 */
function requestOf(model: SpecModel): Record<string, unknown> {
  if (model.profile !== undefined)
    return {
      profile: model.profile,
      ...Object.fromEntries(TUNING_KEYS.flatMap((key) => (model[key] === undefined ? [] : [[key, model[key]]]))),
    };
  const { fallbacks, ...own } = model;
  return fallbacks === undefined ? own : { ...own, fallbacks: fallbacks.map(requestOf) };
}

/** A profile as `/v1/server-info` shows it: never its key or where the key comes from; the profiles it falls back on, in order. */
export type ProfileSummary = {
  readonly name: string;
  readonly provider: string;
  readonly model: string;
  readonly fallbacks: readonly string[];
};

/** Where a spec's profile model reads its key from, or why it cannot be used. */
export type ProfileKey =
  | { readonly ok: true; readonly key: Pick<LlmConfig, 'apiKey' | 'apiKeyEnv'> }
  | { readonly ok: false; readonly reason: string };

/** A profile whose key is read from a variable, and that variable. */
export type KeyVariable = {
  readonly profile: string;
  readonly provider: string;
  readonly model: string;
  readonly variable: string;
};

/**
 * The operator's models: its profiles (the deployment's own model among them, as `default`) with
 * their fallbacks, and the models of their own that specs may name where the operator allows them.
 * The one place a spec's model is made from a request, and the one place its key is found.
 */
export class ModelCatalog {
  readonly #profiles: ReadonlyMap<string, LlmConfig>;
  /** Each profile's fallbacks, by name, for those that have some. */
  readonly #fallbacks: ReadonlyMap<string, readonly string[]>;
  readonly #customModels: OperatorLimits['customModels'];

  /** Throws a SpecRefused (naming `profiles.…`, `fallbacks.…`) when a profile takes the default's name or a fallback names no profile. */
  constructor(
    own: LlmConfig,
    profiles: Readonly<Record<string, LlmConfig>>,
    fallbacks: Readonly<Record<string, readonly string[]>>,
    customModels: OperatorLimits['customModels'],
  ) {
    if (DEFAULT_PROFILE in profiles)
      throw new SpecRefused(400, [
        {
          path: `profiles.${DEFAULT_PROFILE}`,
          message: "is the deployment's own model (its agent settings' llm): name the profile otherwise",
        },
      ]);
    this.#profiles = new Map([[DEFAULT_PROFILE, own], ...Object.entries(profiles)]);
    const wrong = fallbackIssues(fallbacks, [...this.#profiles.keys()]);
    if (wrong.length > 0) throw new SpecRefused(400, wrong);
    this.#fallbacks = new Map(Object.entries(fallbacks));
    this.#customModels = customModels;
  }

  /** The profiles' names, the deployment's own (`default`) first. */
  names(): string[] {
    return [...this.#profiles.keys()];
  }

  has(name: string): boolean {
    return this.#profiles.has(name);
  }

  summaries(): ProfileSummary[] {
    return [...this.#profiles]
      .map(([name, config]) => ({
        name,
        provider: config.provider,
        model: config.model,
        fallbacks: this.#fallbacks.get(name) ?? [],
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * The key's source for a spec's profile model: the profile's `apiKey`/`apiKeyEnv` (a profile that
   * names neither reads its provider's usual variable, OPENAI_API_KEY or ANTHROPIC_API_KEY: it is
   * the operator's, and so is the environment it is read from), only while the spec's endpoint is
   * still the profile's (a profile moved elsewhere does not send its key where an older spec
   * points). A reason when it cannot be used.
   */
  profileKey(model: SpecModel): ProfileKey {
    const name = model.profile;
    const profile = name === undefined ? undefined : this.#profiles.get(name);
    if (!profile)
      return {
        ok: false,
        reason: `the model profile "${name}" is not offered by this deployment any more: switch the conversation's model`,
      };
    if (profile.provider !== model.provider || profile.baseURL !== model.baseURL) {
      return {
        ok: false,
        reason: `the model profile "${name}" now points elsewhere than this conversation's spec: switch the conversation's model to use it`,
      };
    }
    return { ok: true, key: keyOfProfile(profile) };
  }

  /**
   * The variable each profile's key is read from, for those that read one (not a profile with
   * `apiKey`, nor one with `apiKeyEnv: false`, a server that takes no key): what a service that
   * calls the models checks at start.
   */
  keyVariables(): KeyVariable[] {
    return [...this.#profiles].flatMap(([profile, config]) => {
      const key = keyOfProfile(config);
      return key.apiKey === undefined && typeof key.apiKeyEnv === 'string'
        ? [{ profile, provider: config.provider, model: config.model, variable: key.apiKeyEnv }]
        : [];
    });
  }

  /** A profile's model as a spec holds it: its settings without the key, its name, and its fallbacks' models (without theirs). */
  profileModel(name: string): Record<string, unknown> {
    const model = modelOfProfile(name, this.#profiles.get(name)!);
    const fallbacks = this.#fallbacks.get(name);
    return fallbacks === undefined
      ? model
      : { ...model, fallbacks: fallbacks.map((fallback) => modelOfProfile(fallback, this.#profiles.get(fallback)!)) };
  }

  /**
   * A requested model: a profile's (with tuning, and the profile's fallbacks), or, where allowed,
   * one of the request's own (with the fallbacks it lists: each a profile's model or one of its
   * own). A fallback (`asFallback`) has no fallbacks of its own.
   */
  resolve(requested: unknown, at: string, asFallback = false): unknown {
    if (typeof requested !== 'object' || requested === null || Array.isArray(requested))
      throw new SpecRefused(400, [
        { path: at, message: 'must be an object: { "profile": "<name>" } or a model of its own' },
      ]);
    const { profile, ...rest } = requested as Record<string, unknown>;
    if (profile !== undefined) {
      const config = typeof profile === 'string' ? this.#profiles.get(profile) : undefined;
      if (!config)
        throw new SpecRefused(400, [
          {
            path: `${at}.profile`,
            message: `no model profile ${JSON.stringify(profile)} (the profiles: ${[...this.#profiles.keys()].join(', ')})`,
          },
        ]);
      const fixed = Object.keys(rest).filter((key) => !(TUNING_KEYS as readonly string[]).includes(key));
      if (fixed.length > 0) {
        throw new SpecRefused(
          400,
          fixed.map((key) => ({
            path: `${at}.${key}`,
            message: `a profile fixes its model's ${key}: with a profile give only ${TUNING_KEYS.join(', ')}`,
          })),
        );
      }
      return {
        ...(asFallback ? modelOfProfile(profile as string, config) : this.profileModel(profile as string)),
        ...rest,
      };
    }
    const allowed = this.#customModels;
    if (allowed === false) {
      throw new SpecRefused(403, [
        {
          path: `${at}.profile`,
          message: `this deployment runs only its model profiles (${[...this.#profiles.keys()].join(', ')}): give one`,
        },
      ]);
    }
    const issues: SpecIssue[] = [];
    const provider = rest['provider'];
    if (allowed.providers && !allowed.providers.includes(provider as never))
      issues.push({ path: `${at}.provider`, message: `not allowed here (allowed: ${allowed.providers.join(', ')})` });
    if (allowed.models && !allowed.models.includes(rest['model'] as string))
      issues.push({ path: `${at}.model`, message: `not allowed here (allowed: ${allowed.models.join(', ')})` });
    const baseURL = rest['baseURL'];
    if (typeof baseURL !== 'string' || !allowed.baseURLs.some((prefix) => baseURL.startsWith(prefix))) {
      issues.push({
        path: `${at}.baseURL`,
        message: `a model of the spec's own needs a base URL starting with one of: ${allowed.baseURLs.join(', ')}`,
      });
    }
    if (issues.length > 0) throw new SpecRefused(403, issues);
    const { fallbacks, ...own } = rest;
    if (fallbacks === undefined) return own;
    if (asFallback)
      throw new SpecRefused(400, [
        {
          path: `${at}.fallbacks`,
          message:
            "a fallback's own fallbacks are not followed: list every model in the fallbacks of the model they back up",
        },
      ]);
    if (!Array.isArray(fallbacks) || fallbacks.length === 0 || fallbacks.length > MAX_FALLBACKS) {
      throw new SpecRefused(400, [
        {
          path: `${at}.fallbacks`,
          message: `must be a list of 1 to ${MAX_FALLBACKS} models, each { "profile": "<name>" } or a model of its own`,
        },
      ]);
    }
    return {
      ...own,
      fallbacks: fallbacks.map((fallback, index) => this.resolve(fallback, `${at}.fallbacks.${index}`, true)),
    };
  }
}

/** Where a profile's key comes from: its `apiKey`, else its `apiKeyEnv`, else its provider's usual variable. */
function keyOfProfile(profile: LlmConfig): Pick<LlmConfig, 'apiKey' | 'apiKeyEnv'> {
  if (profile.apiKey !== undefined)
    return { apiKey: profile.apiKey, ...(profile.apiKeyEnv !== undefined ? { apiKeyEnv: profile.apiKeyEnv } : {}) };
  return { apiKeyEnv: profile.apiKeyEnv ?? defaultApiKeyVariable(profile.provider) };
}

/** A profile's model as a spec holds it: everything but the key, and the profile's name. */
function modelOfProfile(name: string, config: LlmConfig): Record<string, unknown> {
  const { apiKey: _key, apiKeyEnv: _variable, ...model } = config;
  return { ...model, profile: name };
}
