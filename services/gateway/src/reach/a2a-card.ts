// The agent card (A2A's self-description at /.well-known/agent-card.json): what Flotilla is, where
// its JSON-RPC endpoint is, how to authenticate, and its skills (the operator's templates). One
// description, written as A2A v1.0's card and as v0.3's for clients of the older protocol.
import { AgentCard, type AgentSkill } from '@a2a-js/sdk';
import type { AgentCatalog } from '@flotilla/agent';

/** Where the JSON-RPC endpoint listens, on the card's host. */
export const A2A_PATH = '/a2a';
/** The card's well-known path (A2A's `AGENT_CARD_PATH`). */
export const AGENT_CARD_ROUTE = '/.well-known/agent-card.json';
/** The protocol versions the endpoint speaks: v1.0 (the SDK's own) and v0.3 (`message/send`, `tasks/get`, …). */
export const A2A_VERSIONS = ['1.0', '0.3'] as const;
export type A2aVersion = (typeof A2A_VERSIONS)[number];

const SCHEME = 'bearer';
const SCHEME_DESCRIPTION = "The tenant's Flotilla API key, as `Authorization: Bearer <key>`.";
const TEXT = ['text/plain'];
const DESCRIPTION =
  "Flotilla's agents: each task is a conversation of your tenant, run by an agent that works in its own sandbox " +
  "(a shell, files, git, the web as the operator allows) until it answers. A skill is one of the operator's templates: " +
  "name it as `metadata.template` of the request; without one, the deployment's default agent answers.";

/** The card as A2A v1.0 describes it (`AgentCard.toJSON` is its wire form). */
export function agentCard(
  catalog: AgentCatalog,
  options: { readonly version: string; readonly baseUrl: string },
): AgentCard {
  const url = `${options.baseUrl}${A2A_PATH}`;
  return {
    name: 'Flotilla',
    description: DESCRIPTION,
    supportedInterfaces: A2A_VERSIONS.map((protocolVersion) => ({
      url,
      protocolBinding: 'JSONRPC',
      tenant: '',
      protocolVersion,
    })),
    provider: undefined,
    version: options.version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      [SCHEME]: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: { description: SCHEME_DESCRIPTION, scheme: 'Bearer', bearerFormat: '' },
        },
      },
    },
    securityRequirements: [{ schemes: { [SCHEME]: { list: [] } } }],
    defaultInputModes: TEXT,
    defaultOutputModes: TEXT,
    skills: templateSkills(catalog),
    signatures: [],
  };
}

/** The card's v1.0 wire form. */
export function agentCardJson(card: AgentCard): unknown {
  return AgentCard.toJSON(card);
}

/** The same card as A2A v0.3 wrote it (`url`, `security`, typed security schemes), for clients of that version. */
export function legacyAgentCardJson(card: AgentCard): Record<string, unknown> {
  const url = card.supportedInterfaces[0]?.url ?? A2A_PATH;
  return {
    protocolVersion: '0.3.0',
    name: card.name,
    description: card.description,
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    version: card.version,
    capabilities: { streaming: true, pushNotifications: false },
    securitySchemes: { [SCHEME]: { type: 'http', scheme: 'bearer', description: SCHEME_DESCRIPTION } },
    security: [{ [SCHEME]: [] }],
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: card.skills.map((skill) => ({
      id: skill.id,
      name: skill.name,
      description: skill.description,
      tags: skill.tags,
      examples: skill.examples,
    })),
  };
}

/** One skill per template of the operator's: its model and tools, never where a key comes from. */
function templateSkills(catalog: AgentCatalog): AgentSkill[] {
  return catalog.templateNames().map((name) => {
    const spec = catalog.template(name)!;
    const tools = spec.tools.length > 0 ? spec.tools.join(', ') : 'none';
    return {
      id: name,
      name,
      description: `The operator's template "${name}": model ${spec.llm.model}, tools ${tools}. Name it as metadata.template.`,
      tags: ['flotilla', 'template', ...spec.tools],
      examples: [],
      inputModes: TEXT,
      outputModes: TEXT,
      securityRequirements: [],
    };
  });
}
