import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { describeError, ToolErrorCode } from '../core/errors.js';
import { errorResult } from '../core/result.js';
import type { JsonSchema, ToolDefinition } from '../core/tool-definition.js';
import { fromMcpResult } from './mcp-result.js';

export type McpToolParameters = Record<string, unknown>;

const McpArguments = z.record(z.string(), z.unknown());

/** Wrap one tool of a connected MCP server; the server validates arguments against its own schema. */
export function createMcpTool(options: {
  readonly client: Client;
  readonly serverName: string;
  readonly tool: Tool;
  readonly exposedName: string;
  readonly callTimeoutMs: number;
}): ToolDefinition<McpToolParameters> {
  const { client, serverName, tool, exposedName, callTimeoutMs } = options;
  const hints = tool.annotations ?? {};
  const readOnly = hints.readOnlyHint ?? false;
  return {
    name: exposedName,
    description: tool.description ?? tool.title ?? `Tool ${tool.name} of MCP server ${serverName}.`,
    parameters: McpArguments,
    jsonSchema: tool.inputSchema as JsonSchema,
    annotations: {
      readOnly,
      destructive: hints.destructiveHint ?? !readOnly,
      idempotent: hints.idempotentHint ?? false,
      openWorld: hints.openWorldHint ?? true,
    },
    resources: () => (readOnly ? [] : [`mcp:${serverName}`]),
    async execute(params, context) {
      try {
        const result = await client.callTool({ name: tool.name, arguments: params }, undefined, {
          timeout: callTimeoutMs,
          signal: context.signal,
        });
        return fromMcpResult(result as Record<string, unknown>);
      } catch (error) {
        context.logger.warn({ server: serverName, tool: tool.name, err: error }, 'MCP tool call failed');
        return errorResult(`The MCP tool "${tool.name}" on server "${serverName}" failed: ${describeError(error)}`, {
          error_code: ToolErrorCode.McpCallFailed,
        });
      }
    },
  };
}

/**
 * A tool a server listed that cannot be called now (its server could not be started again): every
 * call is an error result saying why, which the model reads.
 */
export function unavailableMcpTool(options: {
  readonly exposedName: string;
  readonly serverName: string;
  readonly reason: string;
}): ToolDefinition<McpToolParameters> {
  const { exposedName, serverName, reason } = options;
  return {
    name: exposedName,
    description: `Tool of MCP server ${serverName}, which is not running.`,
    parameters: McpArguments,
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: true },
    resources: () => [`mcp:${serverName}`],
    execute: () =>
      Promise.resolve(
        errorResult(`The MCP tool "${exposedName}" could not be called: ${reason}`, {
          error_code: ToolErrorCode.McpConnectFailed,
        }),
      ),
  };
}
