import {
  agentConfigOf,
  llmConfigOf,
  readAgentSpec,
  specTools,
  unlistedServers,
  withListedTools,
  type AgentCatalog,
  type AgentConfig,
  type AgentSpec,
  type SpecModel,
  type ToolCatalog,
} from '@flotilla/agent';
import type { AgentSpecEvent, McpToolsEvent } from '@flotilla/events';
import {
  createLanguageModel,
  LlmError,
  withFallbacks,
  withStoredImages,
  type FallbackTaken,
  type LanguageModel,
  type LlmConfig,
  type StoredImageRef,
} from '@flotilla/llm';
import type { ConversationRef } from '@flotilla/log';
import { setRecent } from '@flotilla/runtime';
import type { ToolRegistry } from '@flotilla/tools';

/** A conversation's agent, from the spec in its log: what its steps run with. */
export type ConversationAgent = {
  readonly spec: AgentSpec;
  readonly config: AgentConfig;
  /** The spec's built-in tools and the tools its MCP servers listed in the log. */
  readonly tools: ToolCatalog;
  /** The spec's MCP servers that have not listed yet: no step is taken before they have. */
  readonly unlisted: readonly string[];
  /** Where the spec came from, for logs: the event's seq, or the deployment's default for a log without one. */
  readonly source: number | 'default';
};

export type AgentLookup =
  { readonly ok: true; readonly agent: ConversationAgent } | { readonly ok: false; readonly reason: string };

/** Where the stored images of a tenant's messages are read (the step worker's ImageStore). */
export type ImageReader = {
  get(tenant: string, image: Pick<StoredImageRef, 'sha256' | 'bytes'>): Promise<Uint8Array | undefined>;
};

/** The secrets a conversation's model key may come from (the tool runner's reader): the tenant's overlaid with the conversation's. */
export type KeySecrets = { reveal(ref: ConversationRef): Promise<Record<string, string>> };

export type ConversationAgentsOptions = {
  readonly catalog: AgentCatalog;
  /** Describes the built-in tools (their schemas) for each spec's catalog. */
  readonly registry: ToolRegistry;
  /** Where keys named by `apiKeySecret` are read; without it such a model fails its calls, saying why. */
  readonly secrets?: KeySecrets;
  /** Where the operator's profiles read their keys (their `apiKeyEnv`, by default the provider's variable). Default process.env. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** Makes a model from its full configuration, key included (default createLanguageModel; benchmarks pass a scripted one). */
  readonly createModel?: (config: LlmConfig) => LanguageModel;
  /** Where stored images are read from; without it a step whose messages hold one fails its call, saying so. */
  readonly images?: ImageReader;
  /** Specs and models kept (most recently used). Default 512. */
  readonly capacity?: number;
  /** Told of each fallback a model call takes, with the conversation it was for (the services count and log them: `fallbackReporter`). */
  readonly onFallback?: (ref: ConversationRef, taken: FallbackTaken) => void;
};

/**
 * Each conversation's agent, as its log's spec says (DESIGN invariant 14): the spec's settings,
 * its tools, and its model with the key from where the spec says (the operator's profile, or a
 * secret of the conversation or its tenant), never from a variable the spec names. A log with no
 * spec (a conversation created before specs were logged) runs the deployment's default spec.
 * Specs are parsed once per event and models made once per endpoint and key.
 */
export class ConversationAgents {
  readonly #options: ConversationAgentsOptions;
  readonly #capacity: number;
  readonly #agents = new Map<string, AgentLookup>();
  readonly #models = new Map<string, LanguageModel>();
  /** Each spec's model (and each of its fallbacks) with the key it was made with: a spec is parsed once, so only its key can change. */
  readonly #lastModel = new WeakMap<SpecModel, { readonly keyed: string; readonly model: LanguageModel }>();
  readonly #default: ConversationAgent;

  constructor(options: ConversationAgentsOptions) {
    this.#options = options;
    this.#capacity = options.capacity ?? 512;
    this.#default = this.#agentOf(options.catalog.defaultSpec, 'default');
  }

  /**
   * The agent of a spec event (its log's last one) with what its MCP servers listed (`listed`, the
   * mcp_tools events for it), or the default's for none. A log's default spec runs no MCP server:
   * servers are started for a spec in the log, whose listings name it.
   */
  of(event: AgentSpecEvent | undefined, listed: readonly McpToolsEvent[] = []): AgentLookup {
    if (event === undefined) return { ok: true, agent: this.#default };
    const id = listed.length === 0 ? event.id : [event.id, ...listed.map((listing) => listing.id)].join(' ');
    const known = this.#agents.get(id);
    if (known) return known;
    const read = readAgentSpec(event);
    const lookup: AgentLookup = read.ok ? { ok: true, agent: this.#agentOf(read.spec, event.seq, listed) } : read;
    setRecent(this.#agents, id, lookup, this.#capacity);
    return lookup;
  }

  /**
   * The model the agent's steps call for `ref`: the spec's, and when its provider is out (after its
   * retries) each of the spec's fallbacks in turn (`withFallbacks`). A key that cannot be had (a
   * profile gone, a secret not set) gives a model whose calls fail with `invalid_config` and the
   * reason: the step ends the run saying so, as for any model that refuses every call.
   */
  async model(ref: ConversationRef, agent: ConversationAgent): Promise<LanguageModel> {
    const { llm } = agent.spec;
    const primary = this.#withImages(ref, await this.#model(ref, llm));
    if (llm.fallbacks === undefined) return primary;
    const fallbacks = await Promise.all(
      llm.fallbacks.map(async (fallback) => ({
        model: this.#withImages(ref, await this.#model(ref, fallback)),
        ...(fallback.profile === undefined ? {} : { profile: fallback.profile }),
      })),
    );
    // the chain is made per call over the models kept, so a fallback taken is told with its conversation
    const onFallback = this.#options.onFallback;
    return withFallbacks(
      { model: primary, ...(llm.profile === undefined ? {} : { profile: llm.profile }) },
      fallbacks,
      onFallback ? { onFallback: (taken) => onFallback(ref, taken) } : {},
    );
  }

  /** The conversation's images read in for a model, under its own tenant only (each model of a chain as it takes images or not). */
  #withImages(ref: ConversationRef, model: LanguageModel): LanguageModel {
    const images = this.#options.images;
    return images ? withStoredImages(model, (image) => images.get(ref.tenant, image)) : model;
  }

  /** One model of a spec (its own, or a fallback), with its key from where the spec says. */
  async #model(ref: ConversationRef, spec: SpecModel): Promise<LanguageModel> {
    let key: Pick<LlmConfig, 'apiKey' | 'apiKeyEnv'>;
    if (spec.profile !== undefined) {
      const profile = this.#options.catalog.profileKey(spec);
      if (!profile.ok) return failingModel(llmConfigOf(spec), profile.reason);
      key = profile.key;
    } else if (spec.apiKeySecret !== undefined) {
      const name = spec.apiKeySecret;
      if (!this.#options.secrets)
        return failingModel(
          llmConfigOf(spec),
          `the model's key is the secret ${name}, and secrets are off in this deployment`,
        );
      const value = (await this.#options.secrets.reveal(ref))[name];
      if (value === undefined)
        return failingModel(
          llmConfigOf(spec),
          `the model's key is the secret ${name}, which is not set for this conversation or its tenant`,
        );
      key = { apiKey: value };
    } else {
      // a model of the spec's own without a key (a local server): never the deployment's variables
      key = { apiKey: 'none' };
    }
    // the common case, a step of an agent whose key is as it was: no work beyond this lookup
    const keyed = `${key.apiKeyEnv ?? ''}\u0000${key.apiKey ?? ''}`;
    const last = this.#lastModel.get(spec);
    if (last?.keyed === keyed) return last.model;
    const config: LlmConfig = { ...llmConfigOf(spec), ...key };
    const id = JSON.stringify(config);
    let model = this.#models.get(id);
    if (!model) {
      // only a profile's key names a variable, read where the operator's are; any other model's never reads one
      const environment = this.#options.environment ?? process.env;
      const create =
        this.#options.createModel ??
        ((settings: LlmConfig) =>
          createLanguageModel(settings, { env: typeof settings.apiKeyEnv === 'string' ? environment : {} }));
      try {
        model = create(config);
      } catch (error) {
        return failingModel(llmConfigOf(spec), (error as Error).message);
      }
    }
    setRecent(this.#models, id, model, this.#capacity);
    this.#lastModel.set(spec, { keyed, model });
    return model;
  }

  #agentOf(spec: AgentSpec, source: number | 'default', listed: readonly McpToolsEvent[] = []): ConversationAgent {
    const tools = withListedTools(specTools(this.#options.registry, spec), listed);
    const unlisted = source === 'default' ? [] : unlistedServers(spec, listed);
    return Object.freeze({ spec, config: agentConfigOf(spec), tools, unlisted, source });
  }
}

/** A model every call of which fails, not retried, with `reason`: a conversation whose model cannot be made. */
function failingModel(config: LlmConfig, reason: string): LanguageModel {
  return {
    info: {
      provider: config.provider,
      model: config.model,
      nativeToolCalling: config.nativeToolCalling,
      vision: config.vision,
    },
    generate: () => Promise.reject(new LlmError('invalid_config', reason, { isRetryable: false })),
  };
}
