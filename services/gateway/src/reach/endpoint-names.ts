/**
 * The agent endpoints an operator may turn on (FLOTILLA_GATEWAY_AGENT_ENDPOINTS): `mcp` (Flotilla
 * as an MCP server at `/mcp`), `a2a` (an A2A agent: its card at `/.well-known/agent-card.json`,
 * JSON-RPC at `/a2a`), `openai` (an OpenAI-compatible `/v1/chat/completions`).
 */
export const AGENT_ENDPOINTS = ['mcp', 'a2a', 'openai'] as const;
export type AgentEndpoint = (typeof AGENT_ENDPOINTS)[number];
