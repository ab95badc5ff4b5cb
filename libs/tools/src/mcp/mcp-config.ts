import { z } from 'zod';

const common = {
  /** Server name, used in logs, failures and (by default) as the tool name prefix. */
  name: z.string().min(1),
  /** `true` (default): tools are named `<name>_<tool>`; a string: `<prefix>_<tool>`; `false`: the server's names. */
  prefix: z.union([z.boolean(), z.string().min(1)]).default(true),
  /** Override the connect-and-list timeout for this server. */
  listTimeoutMs: z.number().positive().optional(),
  /** Override the per-call timeout for this server. */
  callTimeoutMs: z.number().positive().optional(),
};

export const McpStdioServerConfig = z.object({
  ...common,
  transport: z.literal('stdio'),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
});
export type McpStdioServerConfig = z.infer<typeof McpStdioServerConfig>;

export const McpHttpServerConfig = z.object({
  ...common,
  transport: z.literal('http'),
  url: z.url(),
  headers: z.record(z.string(), z.string()).optional(),
});
export type McpHttpServerConfig = z.infer<typeof McpHttpServerConfig>;

/** One MCP server: a local command over stdio, or a Streamable HTTP endpoint. */
export const McpServerConfig = z.discriminatedUnion('transport', [McpStdioServerConfig, McpHttpServerConfig]);
export type McpServerConfig = z.infer<typeof McpServerConfig>;
export type McpServerConfigInput = z.input<typeof McpServerConfig>;

/** OpenAI and Anthropic accept tool names matching ^[a-zA-Z0-9_-]{1,64}$. */
export function mcpToolName(config: Pick<McpServerConfig, 'name' | 'prefix'>, toolName: string): string {
  const prefix = config.prefix === false ? '' : `${config.prefix === true ? config.name : config.prefix}_`;
  return `${prefix}${toolName}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}
