import { readFileSync } from 'node:fs';
import { AgentConfig } from '@flotilla/agent';
import { builtinToolNames } from '@flotilla/tools';

/**
 * The agent configuration a service runs with: FLOTILLA_AGENT_FILE (a JSON file),
 * FLOTILLA_AGENT (inline JSON), or one built from FLOTILLA_LLM_PROVIDER / FLOTILLA_LLM_MODEL /
 * FLOTILLA_LLM_BASE_URL (API keys come from the provider's usual variable, e.g. OPENAI_API_KEY).
 */
export function loadAgentSettings(environment: NodeJS.ProcessEnv = process.env): AgentConfig {
  const file = environment['FLOTILLA_AGENT_FILE'];
  const inline = environment['FLOTILLA_AGENT'];
  let raw: unknown;
  try {
    if (file) raw = JSON.parse(readFileSync(file, 'utf8'));
    else if (inline) raw = JSON.parse(inline);
  } catch (error) {
    throw new Error(`${file ? `FLOTILLA_AGENT_FILE (${file})` : 'FLOTILLA_AGENT'} is not valid JSON: ${(error as Error).message}`);
  }
  const source = file ? `FLOTILLA_AGENT_FILE (${file})` : inline ? 'FLOTILLA_AGENT' : undefined;
  if (raw === undefined) {
    const baseURL = environment['FLOTILLA_LLM_BASE_URL'];
    raw = {
      llm: {
        provider: environment['FLOTILLA_LLM_PROVIDER'] ?? 'openai-chat',
        model: environment['FLOTILLA_LLM_MODEL'] ?? 'gpt-4o-mini',
        ...(baseURL ? { baseURL } : {}),
        ...(environment['FLOTILLA_LLM_API_KEY_ENV'] ? { apiKeyEnv: environment['FLOTILLA_LLM_API_KEY_ENV'] } : {}),
      },
    };
  }
  const parsed = AgentConfig.safeParse(raw);
  if (parsed.success) {
    // a tool the services cannot offer is a mistake to report, not a name to drop
    const known = builtinToolNames();
    const unknown = parsed.data.tools.filter((name) => !known.includes(name));
    if (unknown.length > 0) {
      throw new Error(
        `invalid agent settings: ${source ?? 'the agent settings'} at tools: ${unknown.map((name) => `"${name}"`).join(', ')} ${unknown.length === 1 ? 'is not a tool' : 'are not tools'} the services run ` +
          `(the built-in ones: ${known.join(', ')}; MCP servers are not connected by the services yet)`,
      );
    }
    return Object.freeze(parsed.data);
  }
  // one line per problem, naming the variable to fix (or the JSON path inside the one that was given)
  const problems = parsed.error.issues.map((issue) => {
    const path = issue.path.join('.');
    const where = source ? `${source} at ${path || '(root)'}` : (SETTING_VARIABLES[path] ?? path);
    const given = source ? '' : ` (got ${JSON.stringify(environment[SETTING_VARIABLES[path] ?? ''] ?? null)})`;
    return `${where}: ${issue.message}${given}`;
  });
  throw new Error(`invalid agent settings: ${problems.join('; ')}`);
}

/** The variables the settings are built from when no JSON is given, by the setting they fill. */
const SETTING_VARIABLES: Readonly<Record<string, string>> = {
  'llm.provider': 'FLOTILLA_LLM_PROVIDER',
  'llm.model': 'FLOTILLA_LLM_MODEL',
  'llm.baseURL': 'FLOTILLA_LLM_BASE_URL',
  'llm.apiKeyEnv': 'FLOTILLA_LLM_API_KEY_ENV',
};
