import { builtinToolNames } from '@flotilla/tools';
import type { AgentConfig } from './agent-config.js';
import { fieldIssues, type AgentSpec, type SpecModel } from './agent-spec.js';
import { AgentCatalogSettings, SpecPatch, type OperatorLimits } from './catalog-settings.js';
import {
  DEFAULT_PROFILE,
  ModelCatalog,
  tunedModel,
  type KeyVariable,
  type ProfileKey,
  type ProfileSummary,
} from './model-catalog.js';
import { checkedSpec, SpecRefused, type SpecIssue } from './spec-checks.js';
import { parseSubAgentMarkdown, TASK_TOOL, type SubAgentDefinition } from './sub-agents.js';

export type SpecRequest = { readonly template?: string; readonly spec?: unknown };
export type ResolvedSpec = { readonly spec: AgentSpec; readonly template?: string };

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
  readonly #models: ModelCatalog;
  readonly #templates: ReadonlyMap<string, AgentSpec>;
  readonly #tools: readonly string[];
  /** The operator's sub-agents, resolved (their models are their profiles'). */
  readonly #subAgents: ReadonlyMap<string, SubAgentDefinition>;

  /** Throws a SpecRefused (naming `profiles.…`, `templates.…`) when the catalog's own parts break its limits. */
  constructor(defaults: AgentConfig, settings: unknown = {}) {
    const parsed = AgentCatalogSettings.safeParse(settings);
    if (!parsed.success) throw new SpecRefused(400, fieldIssues(parsed.error));
    const { profiles, fallbacks, templates, limits, subAgents } = parsed.data;
    this.#models = new ModelCatalog(defaults.llm, profiles, fallbacks, limits.customModels);
    this.limits = limits;
    this.#tools = limits.tools ?? [...builtinToolNames(), TASK_TOOL];
    this.#subAgents = this.#readSubAgents(subAgents);
    const { llm: _llm, ...rest } = defaults;
    this.defaultSpec = checkedSpec(
      { ...rest, llm: this.#models.profileModel(DEFAULT_PROFILE) },
      'defaults',
      limits,
      this.#tools,
    );
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
    return this.#models.summaries();
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

  /** Where a spec's profile model reads its key from, or why it cannot (`ModelCatalog.profileKey`). */
  profileKey(model: SpecModel): ProfileKey {
    return this.#models.profileKey(model);
  }

  /**
   * The variable each profile's key is read from, for a service that calls the models to check at
   * start (`ModelCatalog.keyVariables`).
   */
  keyVariables(): KeyVariable[] {
    return this.#models.keyVariables();
  }

  #apply(base: AgentSpec, patch: unknown, at: string): AgentSpec {
    const fields = SpecPatch.safeParse(patch);
    if (!fields.success) throw new SpecRefused(400, fieldIssues(fields.error, at));
    const given = Object.fromEntries(Object.entries(fields.data).filter(([, value]) => value !== undefined));
    const llm =
      given['llm'] === undefined ? base.llm : this.#models.resolve(tunedModel(given['llm'], base.llm), `${at}.llm`);
    const subAgents =
      given['subAgents'] === undefined ? base.subAgents : this.#namedSubAgents(given['subAgents'], `${at}.subAgents`);
    return checkedSpec({ ...base, ...given, llm, subAgents }, at, this.limits, this.#tools);
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
      const known = profile !== undefined && this.#models.has(profile);
      if (profile !== undefined && !known)
        issues.push({
          path: `${at}.model`,
          message: `no model profile ${JSON.stringify(profile)} (the profiles: ${this.#models.names().join(', ')})`,
        });
      agents.set(definition.name, {
        ...definition,
        ...(known ? { llm: this.#models.profileModel(profile!) as SpecModel } : {}),
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
}
