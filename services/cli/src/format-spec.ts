import type { ConversationSpec } from '@flotilla/api';

type Model = {
  provider?: unknown;
  model?: unknown;
  profile?: unknown;
  baseURL?: unknown;
  temperature?: unknown;
  reasoningEffort?: unknown;
};

/** `spec ID`: the spec in force, its model, tools and policies, one per line (`--json` has all of it). */
export function renderSpec(current: ConversationSpec): string[] {
  const { spec } = current;
  const llm = (spec['llm'] ?? {}) as Model;
  const tuning = [
    llm.temperature === undefined ? '' : `temperature ${String(llm.temperature)}`,
    llm.reasoningEffort === undefined ? '' : `reasoning ${String(llm.reasoningEffort)}`,
  ].filter(Boolean);
  const where =
    llm.profile !== undefined ? `profile ${String(llm.profile)}` : llm.baseURL !== undefined ? String(llm.baseURL) : '';
  const tools = Array.isArray(spec['tools']) ? (spec['tools'] as unknown[]).map(String) : [];
  const mcp = Array.isArray(spec['mcpServers'])
    ? (spec['mcpServers'] as { name?: unknown }[]).map((server) => String(server.name))
    : [];
  const confirmation = (spec['confirmation'] ?? {}) as { mode?: unknown; threshold?: unknown };
  const limits = (spec['limits'] ?? {}) as { maxIterationsPerRun?: unknown; maxBudgetPerRunUsd?: unknown };
  return [
    current.seq === null
      ? "spec:      the deployment's default (the log has no agent_spec)"
      : `spec:      seq ${current.seq}${current.reason === null ? '' : ` (${current.reason})`}`,
    `template:  ${current.template ?? '-'}`,
    `model:     ${String(llm.provider ?? '?')} ${String(llm.model ?? '?')}${where === '' ? '' : ` (${where})`}${tuning.length === 0 ? '' : `, ${tuning.join(', ')}`}`,
    `tools:     ${tools.length === 0 ? '-' : tools.join(', ')}${mcp.length === 0 ? '' : `; MCP servers: ${mcp.join(', ')}`}`,
    `confirm:   ${String(confirmation.mode ?? 'never')}${confirmation.threshold === undefined ? '' : ` (at ${String(confirmation.threshold)} risk)`}`,
    `limits:    ${limits.maxIterationsPerRun === undefined ? '-' : `${String(limits.maxIterationsPerRun)} steps per run`}${limits.maxBudgetPerRunUsd === undefined ? '' : `, $${String(limits.maxBudgetPerRunUsd)} per run`}`,
  ];
}
