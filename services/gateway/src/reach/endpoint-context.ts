import type { AgentCatalog } from '@flotilla/agent';
import type { Logger } from 'pino';
import type { AgentRuns } from './agent-runs.js';

/** What every agent endpoint gets. */
export type EndpointContext = {
  /** Runs through this gateway's own API with the caller's key. */
  readonly runs: AgentRuns;
  /** The gateway's version (the A2A card's, the MCP server's). */
  readonly version: string;
  readonly logger: Logger;
  /** The operator's agents (the A2A card's skills are its templates; read without a tenant's key). */
  readonly catalog: AgentCatalog;
};
