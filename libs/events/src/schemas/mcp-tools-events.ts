import { z } from 'zod';
import { ToolSpec } from './conversation-events.js';
import { envelope, versionField } from './envelope.js';

/** An MCP server's name in a spec and in the log: what its tools are prefixed with (`<server>_<tool>`). */
export const McpServerName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/,
    'must be 1-32 characters of A-Z a-z 0-9 _ -, starting with a letter or digit',
  );
export type McpServerName = z.infer<typeof McpServerName>;

/**
 * What one MCP server of the agent spec in force offers: the tool runner started it (in the
 * conversation's sandbox, or connected to its URL) and listed its tools, named as the agent calls
 * them, with their schemas; or it could not, and `error` says why (it then offers none). The step
 * worker offers the model the spec's built-in tools and the tools so listed for that spec, and
 * nothing an MCP server has not listed in the log. Introduced in protocol version 3.
 */
export const McpToolsEvent = z
  .strictObject({
    ...envelope,
    v: versionField('mcp_tools', 3),
    type: z.literal('mcp_tools'),
    /** The seq of the agent_spec event whose server this is: a later spec is listed again. */
    spec_seq: z.number().int().positive(),
    server: McpServerName,
    tools: z.array(ToolSpec).max(256),
    /** Why the server offers no tools: it could not be started, connected to or listed. */
    error: z.strictObject({ code: z.string().min(1).max(100), message: z.string().min(1).max(4_000) }).optional(),
  })
  .refine((event) => event.error === undefined || event.tools.length === 0, {
    message: 'a server that failed lists no tools',
    path: ['tools'],
  });
export type McpToolsEvent = z.infer<typeof McpToolsEvent>;
