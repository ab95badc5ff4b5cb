import { SpecName } from '@flotilla/events';
import { defaultApiKeyVariable, LlmConfig } from '@flotilla/llm';
import { builtinToolNames } from '@flotilla/tools';
import { z } from 'zod';
import type { AgentConfig } from './agent-config.js';
import { AGENT_SPEC_VERSION, AgentSpec, fieldIssues, MAX_FALLBACKS, type SpecModel } from './agent-spec.js';
import { fallbackIssues } from './profile-fallbacks.js';
import {
  DEFAULT_MAX_SUB_AGENT_DEPTH,
  DEFAULT_MAX_SUB_AGENTS,
  parseSubAgentMarkdown,
  TASK_TOOL,
  type SubAgentDefinition,
} from './sub-agents.js';

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
function tunedModel(requested: unknown, current: AgentSpec['llm']): unknown {
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

/**
 * What an operator allows the specs of its users: which models beyond its profiles (none by
 * default: a model the user names is called from the step workers, with what they can reach),
 * which built-in tools, which MCP servers (none by default), and the most a run may take.
 */
export const OperatorLimits = z.strictObject({
  /** Models a spec may name itself (provider, model, base URL, its key as a secret), or false: only the profiles. */
  customModels: z
    .union([
      z.literal(false),
      z.strictObject({
        providers: z.array(LlmConfig.shape.provider).min(1).optional(),
        /** Model names a custom model may have (default: any). */
        models: z.array(z.string().min(1)).min(1).optional(),
        /** Base URLs a custom model may use, as prefixes (e.g. `https://api.openai.com/`); one is required. */
        baseURLs: z.array(z.url()).min(1),
      }),
    ])
    .default(false),
  /** Built-in tools a spec may offer (default: all of them). */
  tools: z.array(z.string().min(1)).optional(),
  /**
   * Commands an MCP stdio server of a spec may be started with, exactly as the spec names them
   * (`node`, `/usr/local/bin/mcp-server-git`), in the conversation's sandbox (default: none).
   */
  mcpCommands: z.array(z.string().min(1)).optional(),
  /**
   * URLs an MCP HTTP server of a spec may have, as prefixes (`https://mcp.example.com/`) (default:
   * none). The tool runner connects to them from its own network, not the sandbox's.
   */
  mcpUrls: z.array(z.url()).optional(),
  /**
   * URLs a spec's HTTP hooks may be POSTed to, as prefixes (`https://hooks.example.com/`)
   * (default: none). The tool runner POSTs them from its own network, not the sandbox's; command
   * hooks need no allowance: they run in the conversation's sandbox, as its agent's commands do.
   */
  hookUrls: z.array(z.url()).optional(),
  maxIterationsPerRun: z.number().int().positive().optional(),
  /** Also the budget of a spec that sets none. */
  maxBudgetPerRunUsd: z.number().positive().optional(),
  /** Sub-agents one conversation may have at work at once, at most; also the limit of a spec that sets none (default 8). */
  maxSubAgents: z.number().int().min(1).max(64).optional(),
  /** Levels of sub-agents below a conversation a user started, at most; also the limit of a spec that sets none (default 2). */
  maxSubAgentDepth: z.number().int().min(1).max(8).optional(),
});
export type OperatorLimits = z.infer<typeof OperatorLimits>;

/**
 * A spec as a request gives it, over a base (the deployment's default, a template, or the
 * conversation's current spec): each top-level field given replaces the base's whole. Its model is
 * a profile's name (with tuning) or, where the operator allows, a model of its own.
 */
const SPEC_FIELDS = Object.keys(AgentSpec.shape).filter((key) => key !== 'version') as (keyof AgentSpec)[];
export const SpecPatch = z.strictObject(
  Object.fromEntries(SPEC_FIELDS.map((key) => [key, z.unknown().optional()])) as Record<
    keyof AgentSpec,
    z.ZodOptional<z.ZodUnknown>
  >,
);
export type SpecPatch = Partial<Record<Exclude<keyof AgentSpec, 'version'>, unknown>>;

/** The operator's catalog: model profiles (with their keys' sources), templates of specs, and the limits every spec keeps. */
export const AgentCatalogSettings = z.strictObject({
  profiles: z.record(SpecName, LlmConfig).default({}),
  /**
   * Each profile's fallbacks (`default` included), in order: `{"default": ["backup"]}`. A call its
   * model's provider cannot make for an outage, once its retries are spent, is made by the next.
   * A fallback's own fallbacks are not followed: a profile's list is its whole chain.
   */
  fallbacks: z.record(SpecName, z.array(SpecName).min(1).max(MAX_FALLBACKS)).default({}),
  templates: z.record(SpecName, SpecPatch).default({}),
  /**
   * The sub-agents a spec may name (`subAgents: ["<name>", …]`), as Markdown definitions in
   * OpenHands' format: a frontmatter (name, description, tools, model — a profile —, workspace,
   * max_iteration_per_run) and a body, the instructions of the sub-agent's system prompt.
   */
  subAgents: z.array(z.string().min(1).max(60_000)).max(64).default([]),
  limits: OperatorLimits.default({ customModels: false }),
});
export type AgentCatalogSettings = z.input<typeof AgentCatalogSettings>;

export type SpecIssue = { readonly path: string; readonly message: string };

/**
 * A spec refused: invalid (400) or outside the operator's limits (403), with every field named
 * (`spec.llm.profile`, `spec.tools`…).
 */
export class SpecRefused extends Error {
  override readonly name = 'SpecRefused';
  constructor(
    readonly status: 400 | 403,
    readonly issues: readonly SpecIssue[],
  ) {
    super(issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '));
  }
}

export type SpecRequest = { readonly template?: string; readonly spec?: unknown };
export type ResolvedSpec = { readonly spec: AgentSpec; readonly template?: string };

/** A profile as `/v1/server-info` shows it: never its key or where the key comes from; the profiles it falls back on, in order. */
export type ProfileSummary = {
  readonly name: string;
  readonly provider: string;
  readonly model: string;
  readonly fallbacks: readonly string[];
};

/** A sub-agent as `/v1/server-info` shows it: what a spec may name in `subAgents`. */
export type SubAgentSummary = {
  readonly name: string;
  readonly description: string;
  readonly tools: readonly string[];
  readonly workspace: 'shared' | 'own';
  readonly model: string | null;
};

/**
 * The operator's catalog of agents and what it allows, and the one place a spec is made from a
 * request: a template or the base, the request's fields over it, the profile's model filled in,
 * checked against the limits and the spec's schema. The deployment's own agent settings are the
 * default spec, and their model the `default` profile.
 */
export class AgentCatalog {
  readonly defaultSpec: AgentSpec;
  readonly limits: OperatorLimits;
  readonly #profiles: ReadonlyMap<string, LlmConfig>;
  /** Each profile's fallbacks, by name, for those that have some. */
  readonly #fallbacks: ReadonlyMap<string, readonly string[]>;
  readonly #templates: ReadonlyMap<string, AgentSpec>;
  readonly #tools: readonly string[];
  /** The operator's sub-agents, resolved (their models are their profiles'). */
  readonly #subAgents: ReadonlyMap<string, SubAgentDefinition>;

  /** Throws a SpecRefused (naming `profiles.…`, `templates.…`) when the catalog's own parts break its limits. */
  constructor(defaults: AgentConfig, settings: unknown = {}) {
    const parsed = AgentCatalogSettings.safeParse(settings);
    if (!parsed.success) throw new SpecRefused(400, fieldIssues(parsed.error));
    const { profiles, fallbacks, templates, limits, subAgents } = parsed.data;
    if (DEFAULT_PROFILE in profiles)
      throw new SpecRefused(400, [
        {
          path: `profiles.${DEFAULT_PROFILE}`,
          message: "is the deployment's own model (its agent settings' llm): name the profile otherwise",
        },
      ]);
    this.limits = limits;
    this.#tools = limits.tools ?? [...builtinToolNames(), TASK_TOOL];
    this.#profiles = new Map([[DEFAULT_PROFILE, defaults.llm], ...Object.entries(profiles)]);
    const wrong = fallbackIssues(fallbacks, [...this.#profiles.keys()]);
    if (wrong.length > 0) throw new SpecRefused(400, wrong);
    this.#fallbacks = new Map(Object.entries(fallbacks));
    this.#subAgents = this.#readSubAgents(subAgents);
    const { llm: _llm, ...rest } = defaults;
    this.defaultSpec = this.#finish({ ...rest, llm: this.#profileModel(DEFAULT_PROFILE) }, 'defaults');
    this.#templates = new Map(
      Object.entries(templates).map(([name, patch]) => [
        name,
        this.#apply(this.defaultSpec, patch, `templates.${name}`),
      ]),
    );
  }

  /** The spec a request makes: `template` (or `base`, default the deployment's) with `spec`'s fields over it. */
  resolve(request: SpecRequest, base: AgentSpec = this.defaultSpec): ResolvedSpec {
    let start = base;
    if (request.template !== undefined) {
      const template = this.#templates.get(request.template);
      if (!template)
        throw new SpecRefused(400, [
          {
            path: 'template',
            message: `no template "${request.template}" (the templates: ${this.templateNames().join(', ') || 'none'})`,
          },
        ]);
      start = template;
    }
    const spec = request.spec === undefined ? start : this.#apply(start, request.spec, 'spec');
    return { spec, ...(request.template !== undefined ? { template: request.template } : {}) };
  }

  templateNames(): string[] {
    return [...this.#templates.keys()].sort();
  }

  template(name: string): AgentSpec | undefined {
    return this.#templates.get(name);
  }

  profiles(): ProfileSummary[] {
    return [...this.#profiles]
      .map(([name, config]) => ({
        name,
        provider: config.provider,
        model: config.model,
        fallbacks: this.#fallbacks.get(name) ?? [],
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The tools a spec may offer here. */
  tools(): readonly string[] {
    return this.#tools;
  }

  /** The sub-agents a spec may name here. */
  subAgents(): SubAgentSummary[] {
    return [...this.#subAgents.values()].map((agent) => ({
      name: agent.name,
      description: agent.description,
      tools: agent.tools,
      workspace: agent.workspace,
      model: agent.llm?.profile ?? null,
    }));
  }

  /**
   * The key's source for a spec's profile model: the profile's `apiKey`/`apiKeyEnv` (a profile that
   * names neither reads its provider's usual variable, OPENAI_API_KEY or ANTHROPIC_API_KEY: it is
   * the operator's, and so is the environment it is read from), only while the spec's endpoint is
   * still the profile's (a profile moved elsewhere does not send its key where an older spec
   * points). A reason when it cannot be used.
   */
  profileKey(
    model: SpecModel,
  ):
    | { readonly ok: true; readonly key: Pick<LlmConfig, 'apiKey' | 'apiKeyEnv'> }
    | { readonly ok: false; readonly reason: string } {
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
  keyVariables(): {
    readonly profile: string;
    readonly provider: string;
    readonly model: string;
    readonly variable: string;
  }[] {
    return [...this.#profiles].flatMap(([profile, config]) => {
      const key = keyOfProfile(config);
      return key.apiKey === undefined && typeof key.apiKeyEnv === 'string'
        ? [{ profile, provider: config.provider, model: config.model, variable: key.apiKeyEnv }]
        : [];
    });
  }

  #apply(base: AgentSpec, patch: unknown, at: string): AgentSpec {
    const fields = SpecPatch.safeParse(patch);
    if (!fields.success) throw new SpecRefused(400, fieldIssues(fields.error, at));
    const given = Object.fromEntries(Object.entries(fields.data).filter(([, value]) => value !== undefined));
    const llm = given['llm'] === undefined ? base.llm : this.#model(tunedModel(given['llm'], base.llm), `${at}.llm`);
    const subAgents =
      given['subAgents'] === undefined ? base.subAgents : this.#namedSubAgents(given['subAgents'], `${at}.subAgents`);
    return this.#finish({ ...base, ...given, llm, subAgents }, at);
  }

  /** A profile's model as a spec holds it: its settings without the key, its name, and its fallbacks' models (without theirs). */
  #profileModel(name: string): Record<string, unknown> {
    const model = modelOfProfile(name, this.#profiles.get(name)!);
    const fallbacks = this.#fallbacks.get(name);
    return fallbacks === undefined
      ? model
      : { ...model, fallbacks: fallbacks.map((fallback) => modelOfProfile(fallback, this.#profiles.get(fallback)!)) };
  }

  /** The operator's Markdown definitions, each read and its model resolved from its profile; an error names `subAgents.N.<field>`. */
  #readSubAgents(texts: readonly string[]): Map<string, SubAgentDefinition> {
    const agents = new Map<string, SubAgentDefinition>();
    const issues: SpecIssue[] = [];
    texts.forEach((text, index) => {
      const at = `subAgents.${index}`;
      const read = parseSubAgentMarkdown(text);
      if (!read.ok) {
        issues.push(...read.issues.map((issue) => ({ path: `${at}.${issue.path}`, message: issue.message })));
        return;
      }
      const { definition, profile } = read.value;
      if (agents.has(definition.name))
        issues.push({ path: `${at}.name`, message: `"${definition.name}" is defined twice` });
      const refused = definition.tools.filter((tool) => !this.#tools.includes(tool));
      if (refused.length > 0)
        issues.push({
          path: `${at}.tools`,
          message: `${refused.map((tool) => `"${tool}"`).join(', ')}: not offered here (the tools: ${this.#tools.join(', ')})`,
        });
      const config = profile === undefined ? undefined : this.#profiles.get(profile);
      if (profile !== undefined && !config)
        issues.push({
          path: `${at}.model`,
          message: `no model profile ${JSON.stringify(profile)} (the profiles: ${[...this.#profiles.keys()].join(', ')})`,
        });
      agents.set(definition.name, {
        ...definition,
        ...(config ? { llm: this.#profileModel(profile!) as SpecModel } : {}),
      });
    });
    if (issues.length > 0) throw new SpecRefused(400, issues);
    return agents;
  }

  /** A request's sub-agents: the names of the operator's (a definition of the request's own could give itself any model or prompt the operator never saw). */
  #namedSubAgents(requested: unknown, at: string): SubAgentDefinition[] {
    if (!Array.isArray(requested))
      throw new SpecRefused(400, [{ path: at, message: 'must be a list of sub-agent names' }]);
    const known = [...this.#subAgents.keys()].join(', ') || 'none';
    const issues: SpecIssue[] = [];
    const agents = requested.flatMap((name, index): SubAgentDefinition[] => {
      const agent = typeof name === 'string' ? this.#subAgents.get(name) : undefined;
      if (!agent)
        issues.push({
          path: `${at}.${index}`,
          message:
            typeof name === 'string'
              ? `no sub-agent "${name}" (the sub-agents: ${known})`
              : `must be a sub-agent's name (the sub-agents: ${known})`,
        });
      return agent ? [agent] : [];
    });
    if (issues.length > 0) throw new SpecRefused(400, issues);
    return agents;
  }

  /**
   * A requested model: a profile's (with tuning, and the profile's fallbacks), or, where allowed,
   * one of the request's own (with the fallbacks it lists: each a profile's model or one of its
   * own). A fallback (`asFallback`) has no fallbacks of its own.
   */
  #model(requested: unknown, at: string, asFallback = false): unknown {
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
        ...(asFallback ? modelOfProfile(profile as string, config) : this.#profileModel(profile as string)),
        ...rest,
      };
    }
    const allowed = this.limits.customModels;
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
      fallbacks: fallbacks.map((fallback, index) => this.#model(fallback, `${at}.fallbacks.${index}`, true)),
    };
  }

  /** The spec's schema, then the limits, on a whole candidate. */
  #finish(candidate: Record<string, unknown>, at: string): AgentSpec {
    const parsed = AgentSpec.safeParse({ ...candidate, version: AGENT_SPEC_VERSION });
    if (!parsed.success) throw new SpecRefused(400, fieldIssues(parsed.error, at));
    const spec = parsed.data;
    const issues: SpecIssue[] = [];
    const refused = spec.tools.filter((tool) => !this.#tools.includes(tool));
    if (refused.length > 0)
      issues.push({
        path: `${at}.tools`,
        message: `${refused.map((tool) => `"${tool}"`).join(', ')}: not offered here (the tools: ${this.#tools.join(', ')})`,
      });
    const invalid = subAgentIssues(spec, at);
    if (invalid.length > 0) throw new SpecRefused(400, invalid);
    issues.push(...mcpIssues(spec.mcpServers, this.limits, `${at}.mcpServers`));
    issues.push(...hookIssues(spec.hooks, this.limits, `${at}.hooks`));
    const { maxIterationsPerRun, maxBudgetPerRunUsd } = this.limits;
    if (maxIterationsPerRun !== undefined && spec.limits.maxIterationsPerRun > maxIterationsPerRun) {
      issues.push({ path: `${at}.limits.maxIterationsPerRun`, message: `at most ${maxIterationsPerRun} here` });
    }
    if (maxBudgetPerRunUsd !== undefined && (spec.limits.maxBudgetPerRunUsd ?? 0) > maxBudgetPerRunUsd) {
      issues.push({ path: `${at}.limits.maxBudgetPerRunUsd`, message: `at most ${maxBudgetPerRunUsd} USD here` });
    }
    // the defaults are caps too: what one conversation may spawn is bounded unless the operator raises it
    const { maxSubAgents = DEFAULT_MAX_SUB_AGENTS, maxSubAgentDepth = DEFAULT_MAX_SUB_AGENT_DEPTH } = this.limits;
    if ((spec.limits.maxSubAgents ?? 0) > maxSubAgents)
      issues.push({ path: `${at}.limits.maxSubAgents`, message: `at most ${maxSubAgents} here` });
    if ((spec.limits.maxSubAgentDepth ?? 0) > maxSubAgentDepth)
      issues.push({ path: `${at}.limits.maxSubAgentDepth`, message: `at most ${maxSubAgentDepth} here` });
    if (issues.length > 0) throw new SpecRefused(403, issues);
    // limits the spec leaves unset are the operator's, written into the spec: the log says what held
    const limits = {
      ...spec.limits,
      ...(maxBudgetPerRunUsd !== undefined && spec.limits.maxBudgetPerRunUsd === undefined
        ? { maxBudgetPerRunUsd }
        : {}),
      ...(spec.subAgents.length > 0
        ? {
            maxSubAgents: spec.limits.maxSubAgents ?? maxSubAgents,
            maxSubAgentDepth: spec.limits.maxSubAgentDepth ?? maxSubAgentDepth,
          }
        : {}),
    };
    return Object.freeze(JSON.stringify(limits) === JSON.stringify(spec.limits) ? spec : { ...spec, limits });
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

/** A spec's sub-agents that do not fit it: a name given twice, a tool the spec does not offer, `task` offered with no sub-agent to start. */
function subAgentIssues(spec: AgentSpec, at: string): SpecIssue[] {
  const issues: SpecIssue[] = [];
  if (spec.tools.includes(TASK_TOOL) && spec.subAgents.length === 0)
    issues.push({
      path: `${at}.tools`,
      message: `"${TASK_TOOL}" starts sub-agents: name them in subAgents, or leave the tool out`,
    });
  const seen = new Set<string>();
  spec.subAgents.forEach((agent, index) => {
    if (seen.has(agent.name))
      issues.push({ path: `${at}.subAgents.${index}`, message: `"${agent.name}" is named twice` });
    seen.add(agent.name);
    const foreign = agent.tools.filter((tool) => !spec.tools.includes(tool));
    if (foreign.length > 0)
      issues.push({
        path: `${at}.subAgents.${index}.tools`,
        message: `${foreign.map((tool) => `"${tool}"`).join(', ')}: a sub-agent's tools are some of its parent's (the spec's tools: ${spec.tools.join(', ')})`,
      });
  });
  return issues;
}

/** The MCP servers a spec names that the operator's limits do not allow, each naming its command or URL. */
function mcpIssues(servers: AgentSpec['mcpServers'], limits: OperatorLimits, at: string): SpecIssue[] {
  const commands = limits.mcpCommands ?? [];
  const urls = limits.mcpUrls ?? [];
  return servers.flatMap((server, index): SpecIssue[] => {
    if (server.transport === 'stdio') {
      if (commands.includes(server.command)) return [];
      return [
        {
          path: `${at}.${index}.command`,
          message: `"${server.command}" is not a command MCP servers may run here (allowed: ${commands.join(', ') || 'none'})`,
        },
      ];
    }
    if (urls.some((prefix) => server.url.startsWith(prefix))) return [];
    return [
      {
        path: `${at}.${index}.url`,
        message: `an MCP server's URL must start with one of: ${urls.join(', ') || '(none allowed here)'}`,
      },
    ];
  });
}

/** The HTTP hooks of a spec whose URL the operator's limits do not allow, each naming its field. */
function hookIssues(hooks: AgentSpec['hooks'], limits: OperatorLimits, at: string): SpecIssue[] {
  const urls = limits.hookUrls ?? [];
  return (Object.entries(hooks) as [string, AgentSpec['hooks']['stop']][]).flatMap(([point, entries]) =>
    entries.flatMap((entry, index) =>
      entry.hooks.flatMap((hook, position): SpecIssue[] =>
        hook.type !== 'http' || urls.some((prefix) => hook.url.startsWith(prefix))
          ? []
          : [
              {
                path: `${at}.${point}.${index}.hooks.${position}.url`,
                message: `an HTTP hook's URL must start with one of: ${urls.join(', ') || '(none allowed here)'}`,
              },
            ],
      ),
    ),
  );
}
