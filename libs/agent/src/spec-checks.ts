import { AGENT_SPEC_VERSION, AgentSpec, fieldIssues } from './agent-spec.js';
import type { OperatorLimits } from './catalog-settings.js';
import { DEFAULT_MAX_SUB_AGENT_DEPTH, DEFAULT_MAX_SUB_AGENTS, TASK_TOOL } from './sub-agents.js';

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

/**
 * A whole candidate spec as the catalog makes it: the spec's schema (400), its sub-agents fitting
 * it (400), then the operator's limits and the tools offered here (403). The limits the spec leaves
 * unset are the operator's, written in.
 */
export function checkedSpec(
  candidate: Record<string, unknown>,
  at: string,
  operator: OperatorLimits,
  offered: readonly string[],
): AgentSpec {
  const parsed = AgentSpec.safeParse({ ...candidate, version: AGENT_SPEC_VERSION });
  if (!parsed.success) throw new SpecRefused(400, fieldIssues(parsed.error, at));
  const spec = parsed.data;
  const issues: SpecIssue[] = [];
  const refused = spec.tools.filter((tool) => !offered.includes(tool));
  if (refused.length > 0)
    issues.push({
      path: `${at}.tools`,
      message: `${refused.map((tool) => `"${tool}"`).join(', ')}: not offered here (the tools: ${offered.join(', ')})`,
    });
  const invalid = subAgentIssues(spec, at);
  if (invalid.length > 0) throw new SpecRefused(400, invalid);
  issues.push(...mcpIssues(spec.mcpServers, operator, `${at}.mcpServers`));
  issues.push(...hookIssues(spec.hooks, operator, `${at}.hooks`));
  const { maxIterationsPerRun, maxBudgetPerRunUsd } = operator;
  if (maxIterationsPerRun !== undefined && spec.limits.maxIterationsPerRun > maxIterationsPerRun) {
    issues.push({ path: `${at}.limits.maxIterationsPerRun`, message: `at most ${maxIterationsPerRun} here` });
  }
  if (maxBudgetPerRunUsd !== undefined && (spec.limits.maxBudgetPerRunUsd ?? 0) > maxBudgetPerRunUsd) {
    issues.push({ path: `${at}.limits.maxBudgetPerRunUsd`, message: `at most ${maxBudgetPerRunUsd} USD here` });
  }
  // the defaults are caps too: what one conversation may spawn is bounded unless the operator raises it
  const { maxSubAgents = DEFAULT_MAX_SUB_AGENTS, maxSubAgentDepth = DEFAULT_MAX_SUB_AGENT_DEPTH } = operator;
  if ((spec.limits.maxSubAgents ?? 0) > maxSubAgents)
    issues.push({ path: `${at}.limits.maxSubAgents`, message: `at most ${maxSubAgents} here` });
  if ((spec.limits.maxSubAgentDepth ?? 0) > maxSubAgentDepth)
    issues.push({ path: `${at}.limits.maxSubAgentDepth`, message: `at most ${maxSubAgentDepth} here` });
  if (issues.length > 0) throw new SpecRefused(403, issues);
  // limits the spec leaves unset are the operator's, written into the spec: the log says what held
  const limits = {
    ...spec.limits,
    ...(maxBudgetPerRunUsd !== undefined && spec.limits.maxBudgetPerRunUsd === undefined ? { maxBudgetPerRunUsd } : {}),
    ...(spec.subAgents.length > 0
      ? {
          maxSubAgents: spec.limits.maxSubAgents ?? maxSubAgents,
          maxSubAgentDepth: spec.limits.maxSubAgentDepth ?? maxSubAgentDepth,
        }
      : {}),
  };
  return Object.freeze(JSON.stringify(limits) === JSON.stringify(spec.limits) ? spec : { ...spec, limits });
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
