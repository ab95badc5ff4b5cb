// Flotilla as an MCP server: its tools over the caller's own client of the API.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { registerReadTools } from './mcp-read-tools.js';
import { registerRunTools } from './mcp-run-tools.js';
import type { ToolScope } from './mcp-tool-results.js';

const INSTRUCTIONS = [
  'Flotilla runs coding agents, each conversation in its own sandbox. start_conversation gives an agent a task and returns its answer; send_message goes on with a conversation; approve answers actions the agent holds for confirmation.',
  'A run can take minutes: send a progressToken to get progress (and keep the request alive), or pass wait: false and poll get_conversation.',
].join(' ');

/** A server for one request: its tools act with the request's key, confined to its tenant. */
export function flotillaMcpServer(scope: ToolScope, version: string): McpServer {
  const server = new McpServer({ name: 'flotilla', title: 'Flotilla', version }, { instructions: INSTRUCTIONS });
  registerRunTools(server, scope);
  registerReadTools(server, scope);
  return server;
}
