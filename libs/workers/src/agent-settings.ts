import { readFileSync } from 'node:fs';
import { AgentCatalog, AgentConfig, DEFAULT_PROFILE, SpecRefused, TASK_TOOL } from '@flotilla/agent';
import { builtinToolNames } from '@flotilla/tools';
import { proxySettings } from '@flotilla/llm';

/**
 * The agent configuration a service runs with: FLOTILLA_AGENT_FILE (a JSON file),
 * FLOTILLA_AGENT (inline JSON), or one built from FLOTILLA_LLM_PROVIDER / FLOTILLA_LLM_MODEL /
 * FLOTILLA_LLM_BASE_URL. Its model is the deployment's `default` profile, whose key comes from
 * the provider's usual variable (OPENAI_API_KEY, ANTHROPIC_API_KEY) unless `apiKeyEnv`
 * (FLOTILLA_LLM_API_KEY_ENV) names another, or is false (`none`): a server that takes no key.
 */
export function loadAgentSettings(environment: NodeJS.ProcessEnv = process.env): AgentConfig {
  const given = readJsonSetting(environment, 'FLOTILLA_AGENT');
  let raw = given?.value;
  const source = given?.source;
  if (raw === undefined) {
    const baseURL = environment['FLOTILLA_LLM_BASE_URL'];
    const keyVariable = environment['FLOTILLA_LLM_API_KEY_ENV']?.trim();
    raw = {
      llm: {
        provider: environment['FLOTILLA_LLM_PROVIDER'] ?? 'openai-chat',
        model: environment['FLOTILLA_LLM_MODEL'] ?? 'gpt-4o-mini',
        ...(baseURL ? { baseURL } : {}),
        ...(keyVariable ? { apiKeyEnv: keyVariable === NO_KEY_VARIABLE ? false : keyVariable } : {}),
      },
    };
  }
  const parsed = AgentConfig.safeParse(raw);
  if (parsed.success) {
    // a tool the services cannot offer is a mistake to report, not a name to drop (MCP servers' tools come from mcpServers)
    const known = [...builtinToolNames(), TASK_TOOL];
    const unknown = parsed.data.tools.filter((name) => !known.includes(name));
    if (unknown.length > 0) {
      throw new Error(
        `invalid agent settings: ${source ?? 'the agent settings'} at tools: ${unknown.map((name) => `"${name}"`).join(', ')} ${unknown.length === 1 ? 'is not a tool' : 'are not tools'} the services run ` +
          `(the built-in ones: ${known.join(', ')}; an MCP server's tools are offered by naming the server in mcpServers)`,
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

/** FLOTILLA_LLM_API_KEY_ENV's value for a model server that takes no key (`"apiKeyEnv": false` in JSON). */
export const NO_KEY_VARIABLE = 'none';

/**
 * Throws, naming each variable, when a profile of the deployment (its default model, the
 * catalog's profiles) reads its key from a variable `environment` does not set, or when a proxy
 * variable (HTTPS_PROXY, HTTP_PROXY) is not a URL: a service that calls the models stops at
 * start, instead of every conversation failing at its first step.
 */
export function checkModelAccess(catalog: AgentCatalog, environment: NodeJS.ProcessEnv = process.env): void {
  proxySettings(environment);
  const missing = catalog.keyVariables().filter(({ variable }) => !environment[variable]?.trim());
  if (missing.length === 0) return;
  const problems = missing.map(({ profile, provider, model, variable }) =>
    profile === DEFAULT_PROFILE
      ? `the default model (${provider} ${model}) reads its key from ${variable}, which is not set: set ${variable}, or name the variable that holds it with FLOTILLA_LLM_API_KEY_ENV ("apiKeyEnv" in FLOTILLA_AGENT_FILE); a server that takes no key: FLOTILLA_LLM_API_KEY_ENV=${NO_KEY_VARIABLE} ("apiKeyEnv": false)`
      : `the model profile "${profile}" (${provider} ${model}) reads its key from ${variable}, which is not set: set ${variable}, or give the profile's "apiKeyEnv" in the agent catalog ("apiKeyEnv": false for a server that takes no key)`,
  );
  throw new Error(`no API key for the deployment's models: ${problems.join('; ')}`);
}

/** The variables the settings are built from when no JSON is given, by the setting they fill. */
const SETTING_VARIABLES: Readonly<Record<string, string>> = {
  'llm.provider': 'FLOTILLA_LLM_PROVIDER',
  'llm.model': 'FLOTILLA_LLM_MODEL',
  'llm.baseURL': 'FLOTILLA_LLM_BASE_URL',
  'llm.apiKeyEnv': 'FLOTILLA_LLM_API_KEY_ENV',
};

/**
 * The deployment's catalog of agents: its default spec (the agent settings above, their model as
 * the `default` profile), and FLOTILLA_AGENT_CATALOG_FILE (a JSON file) or FLOTILLA_AGENT_CATALOG
 * (inline JSON): model profiles, templates and the limits every conversation's spec keeps. The
 * gateway makes specs with it; the services that call models read profiles' keys from it.
 */
export function loadAgentCatalog(environment: NodeJS.ProcessEnv = process.env): AgentCatalog {
  const defaults = loadAgentSettings(environment);
  const given = readJsonSetting(environment, 'FLOTILLA_AGENT_CATALOG');
  try {
    return new AgentCatalog(defaults, given?.value ?? {});
  } catch (error) {
    if (!(error instanceof SpecRefused)) throw error;
    // the default spec is the agent settings, checked against the catalog's limits like any other
    const where = (path: string): string =>
      path.startsWith('defaults.')
        ? `the agent settings (FLOTILLA_AGENT, FLOTILLA_AGENT_FILE or FLOTILLA_LLM_*) at ${path.slice('defaults.'.length)}`
        : `${given?.source ?? 'FLOTILLA_AGENT_CATALOG'} at ${path}`;
    throw new Error(
      `invalid agent catalog: ${error.issues.map((issue) => `${where(issue.path)}: ${issue.message}${given && issue.path.startsWith('defaults.') ? ` (the limits of ${given.source})` : ''}`).join('; ')}`,
    );
  }
}

/** A JSON setting from `<name>_FILE` (a file) or `<name>` (inline), and which of them it came from. */
function readJsonSetting(
  environment: NodeJS.ProcessEnv,
  name: string,
): { readonly value: unknown; readonly source: string } | undefined {
  const file = environment[`${name}_FILE`];
  const inline = environment[name];
  if (!file && !inline) return undefined;
  const source = file ? `${name}_FILE (${file})` : name;
  try {
    return { value: JSON.parse(file ? readFileSync(file, 'utf8') : inline!), source };
  } catch (error) {
    throw new Error(`${source} is not valid JSON: ${(error as Error).message}`);
  }
}
