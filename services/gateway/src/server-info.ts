import { MAX_MESSAGE_BODY_BYTES, MAX_MESSAGE_IMAGE_BYTES, type ServerInfo } from '@flotilla/api';
import type { AgentCatalog } from '@flotilla/agent';
import {
  CURRENT_PROTOCOL_VERSION,
  MAX_IMAGE_BYTES,
  MAX_IMAGES_PER_MESSAGE,
  STORED_IMAGE_MEDIA_TYPES,
} from '@flotilla/events';
import type { GatewayConfig } from './config.js';
import type { GatewayDependencies } from './gateway-dependencies.js';
import type { SandboxSummary } from './sandbox-summary.js';
import type { SecretService } from './secret-service.js';

/**
 * What `/v1/server-info` tells a tenant of this gateway: its versions, tools and agents, what it
 * can do, its sandboxes (as last summarised) and its limits.
 */
export function serverInfoOf(
  deps: Pick<GatewayDependencies, 'version' | 'instance' | 'tools' | 'catalog'>,
  config: GatewayConfig,
  secrets: SecretService,
  sandboxes: SandboxSummary,
): (tenant: string) => ServerInfo {
  return (tenant) => ({
    name: 'flotilla-gateway',
    version: deps.version,
    protocol_version: CURRENT_PROTOCOL_VERSION,
    api_version: 'v1',
    instance: deps.instance,
    tenant,
    tools: [...deps.tools],
    agents: agentsInfo(deps.catalog),
    capabilities: {
      websocket: true,
      token_streaming: true,
      confirmation: true,
      condensation: true,
      event_search: true,
      secrets: secrets.available,
    },
    sandbox: sandboxes.current,
    limits: {
      max_body_bytes: config.maxBodyBytes,
      max_frame_bytes: config.maxFrameBytes,
      max_subscribers_per_conversation: config.maxSubscribersPerConversation,
      max_running: config.maxRunning,
      max_running_per_tenant: config.maxRunningPerTenant,
      images: {
        max_image_bytes: MAX_IMAGE_BYTES,
        max_images_per_message: MAX_IMAGES_PER_MESSAGE,
        max_message_image_bytes: MAX_MESSAGE_IMAGE_BYTES,
        max_message_body_bytes: MAX_MESSAGE_BODY_BYTES,
        media_types: [...STORED_IMAGE_MEDIA_TYPES],
      },
    },
  });
}

/** What `/v1/server-info` shows of the operator's agents: names, models and tools, never a key or where it comes from. */
function agentsInfo(catalog: AgentCatalog): ServerInfo['agents'] {
  const custom = catalog.limits.customModels;
  return {
    templates: catalog.templateNames().map((name) => {
      const spec = catalog.template(name)!;
      return { name, model: spec.llm.model, tools: [...spec.tools] };
    }),
    profiles: catalog.profiles().map((profile) => ({ ...profile, fallbacks: [...profile.fallbacks] })),
    custom_models:
      custom === false
        ? false
        : { providers: custom.providers ? [...custom.providers] : null, base_urls: [...custom.baseURLs] },
    default: { model: catalog.defaultSpec.llm.model, tools: [...catalog.defaultSpec.tools] },
    mcp: { commands: [...(catalog.limits.mcpCommands ?? [])], url_prefixes: [...(catalog.limits.mcpUrls ?? [])] },
    sub_agents: catalog.subAgents().map((agent) => ({ ...agent, tools: [...agent.tools] })),
  };
}
