import type { AgentCatalog } from '@flotilla/agent';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { registerA2aEndpoint } from './a2a-endpoint.js';
import { AgentRuns } from './agent-runs.js';
import type { EndpointContext } from './endpoint-context.js';
import type { AgentEndpoint } from './endpoint-names.js';
import { registerMcpEndpoint } from './mcp-endpoint.js';
import { registerOpenAiEndpoint } from './openai-endpoint.js';

const REGISTER: Record<AgentEndpoint, (app: FastifyInstance, context: EndpointContext) => Promise<void> | void> = {
  mcp: registerMcpEndpoint,
  a2a: registerA2aEndpoint,
  openai: registerOpenAiEndpoint,
};

/** The agent endpoints the operator turned on, on `app` (each authenticated with the tenant's key, confined to it). */
export async function registerAgentEndpoints(
  app: FastifyInstance,
  enabled: readonly AgentEndpoint[],
  options: { readonly version: string; readonly logger: Logger; readonly catalog: AgentCatalog },
): Promise<void> {
  const context: EndpointContext = { runs: new AgentRuns(AgentRuns.selfUrl(app)), ...options };
  for (const endpoint of new Set(enabled)) await REGISTER[endpoint](app, context);
}
