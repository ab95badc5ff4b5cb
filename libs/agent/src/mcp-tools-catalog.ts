import type { McpToolsEvent, ToolSpec } from '@flotilla/events';
import type { AgentSpec } from './agent-spec.js';
import type { ToolCatalog } from './tool-catalog.js';

/**
 * The MCP servers of `spec` that its listing (`listed`, the mcp_tools events for it) does not
 * answer yet, tools or failure: a step is not taken before they are (docs/architecture.md, "MCP").
 */
export function unlistedServers(spec: AgentSpec, listed: readonly McpToolsEvent[]): string[] {
  if (spec.mcpServers.length === 0) return [];
  const answered = new Set(listed.map((listing) => listing.server));
  return spec.mcpServers.map((server) => server.name).filter((name) => !answered.has(name));
}

/**
 * The tools of `base` (a spec's built-ins) and those its MCP servers listed in the log, which the
 * model is offered with the schemas the servers gave. A listed tool's arguments are checked by its
 * server when it is called (any object is passed on); a name `base` already has keeps `base`'s tool.
 */
export function withListedTools(base: ToolCatalog, listed: readonly McpToolsEvent[]): ToolCatalog {
  if (listed.every((listing) => listing.tools.length === 0)) return base;
  const builtin = new Set(base.specs().map((spec) => spec.name));
  const mcp = new Map<string, ToolSpec>();
  for (const spec of listed.flatMap((listing) => listing.tools)) {
    if (!builtin.has(spec.name) && !mcp.has(spec.name)) mcp.set(spec.name, spec);
  }
  const specs = [...base.specs(), ...mcp.values()];
  return {
    specs: () => specs,
    isReadOnly: (name) => (mcp.has(name) ? mcp.get(name)?.annotations?.read_only === true : base.isReadOnly(name)),
    check: (name, input) => (mcp.has(name) ? { ok: true, input } : base.check(name, input)),
  };
}
