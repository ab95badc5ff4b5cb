import {
  DelegationFold,
  readAgentSpec,
  SkillsFold,
  SpecFold,
  unlistedServers,
  type AgentSpec,
  type HooksConfig,
  type NextWork,
} from '@flotilla/agent';
import type { Event, McpToolsEvent } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { IncrementalFold } from './incremental-fold.js';
import type { ToolRunnerDependencies } from './tool-runner-dependencies.js';

/** What a batch of actions runs with (`inForce`). */
export type InForce = {
  readonly skills: SkillsFold;
  readonly mcp: McpInForce | undefined;
  readonly hooks: HooksConfig | undefined;
  readonly modelKey?: string;
  readonly home?: ConversationRef;
};

/** A spec in force that names MCP servers, where it is, and what its servers listed. */
export type McpInForce = {
  readonly spec: AgentSpec;
  readonly specSeq: number;
  readonly listed: readonly McpToolsEvent[];
};
/** And the servers of it that have not listed yet. */
export type McpOwed = McpInForce & { readonly servers: readonly string[] };

/**
 * What a conversation's log says its tools act with, kept beside each cached conversation and
 * extended as the cache grows (no rescans per delivery): the workspace they act in, the agent spec
 * in force (its hooks, its MCP servers and what they listed, its model's key) and the skills and
 * path rules shown; and the conversation's secrets, as its sandbox gets them.
 */
export class ConversationInForce {
  readonly #deps: Pick<ToolRunnerDependencies, 'secrets'>;
  /** Each cached conversation's workspace context and the path rules it was shown. */
  readonly #skills = new IncrementalFold(
    () => new SkillsFold(),
    (fold, events) => fold.append(events),
  );
  /** Each cached conversation's link to its parent, when it is a sub-agent's: whose workspace it works in. */
  readonly #delegations = new IncrementalFold(
    () => new DelegationFold(),
    (fold, events) => fold.append(events),
  );
  /** Each cached conversation's agent spec in force and what its MCP servers listed. */
  readonly #specs = new IncrementalFold(
    () => new SpecFold(),
    (fold, events) => fold.append(events),
  );

  constructor(deps: Pick<ToolRunnerDependencies, 'secrets'>) {
    this.#deps = deps;
  }

  /** The conversation whose workspace a conversation's tools act in: itself, or a sub-agent's parent's (its subagent_task says). */
  home(ref: ConversationRef, events: readonly Event[]): ConversationRef {
    const workspace = this.#delegations.of(events).workspace(ref.conversation);
    return workspace === ref.conversation ? ref : { tenant: ref.tenant, conversation: workspace };
  }

  /** The spec in force, when it is readable (a spec this build cannot read ends the run at the step worker). */
  specInForce(events: readonly Event[]): AgentSpec | undefined {
    const event = this.#specs.of(events).event();
    const read = event === undefined ? undefined : readAgentSpec(event);
    return read?.ok ? read.spec : undefined;
  }

  /** The hooks of the spec in force, when it has a readable spec. */
  hooksInForce(events: readonly Event[]): HooksConfig | undefined {
    return this.specInForce(events)?.hooks;
  }

  /** What a batch of actions runs with, from the log: its skills, the spec's MCP servers and hooks, the secret that is its model's key. */
  inForce(events: readonly Event[], ref?: ConversationRef): InForce {
    const modelKey = this.specInForce(events)?.llm.apiKeySecret;
    return {
      skills: this.#skills.of(events),
      mcp: this.mcpInForce(events),
      hooks: this.hooksInForce(events),
      ...(modelKey ? { modelKey } : {}),
      ...(ref ? { home: this.home(ref, events) } : {}),
    };
  }

  /**
   * The conversation's secrets: all of them (what is masked in what leaves this runner), and those
   * its sandbox gets: all but the one the spec's model key is — the model's key is for the step
   * workers, and the agent's commands have no use for it.
   */
  async secrets(
    ref: ConversationRef,
    modelKey: string | undefined,
  ): Promise<{ readonly all: Record<string, string>; readonly sandbox: Record<string, string> }> {
    const all = (await this.#deps.secrets?.reveal(ref)) ?? {};
    if (modelKey === undefined || !(modelKey in all)) return { all, sandbox: all };
    const { [modelKey]: _key, ...sandbox } = all;
    return { all, sandbox };
  }

  /** The spec in force and what its MCP servers listed, when the spec names MCP servers. */
  mcpInForce(events: readonly Event[]): McpInForce | undefined {
    const fold = this.#specs.of(events);
    const event = fold.event();
    if (event === undefined) return undefined;
    // a spec this build cannot read ends the run at the step worker, saying why; nothing is started for it
    const read = readAgentSpec(event);
    if (!read.ok || read.spec.mcpServers.length === 0) return undefined;
    return { spec: read.spec, specSeq: event.seq, listed: fold.listed() };
  }

  /**
   * The spec's MCP servers whose listing the log does not have yet, when a step is due: the owner
   * of the workspace lists them first (the step waits for it), at the first use of the spec, so
   * the secrets set before the run are there.
   */
  mcpOwed(work: NextWork, events: readonly Event[]): McpOwed | undefined {
    if (work.kind !== 'step') return undefined;
    const mcp = this.mcpInForce(events);
    const servers = mcp === undefined ? [] : unlistedServers(mcp.spec, mcp.listed);
    return mcp && servers.length > 0 ? { ...mcp, servers } : undefined;
  }
}
