import { SpecName } from '@flotilla/events';
import { LlmConfig } from '@flotilla/llm';
import { z } from 'zod';
import { AgentSpec, MAX_FALLBACKS } from './agent-spec.js';

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
