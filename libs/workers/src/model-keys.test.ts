import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentCatalog } from '@flotilla/agent';
import { fixtureReply, firstTurn, loadFixture, startTestServer, type LlmTestServer } from '@flotilla/llm/testing';
import type { ConversationRef } from '@flotilla/log';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkModelAccess, loadAgentCatalog } from './agent-settings.js';
import { ConversationAgents } from './conversation-agents.js';

// The deployment's models (its default, the catalog's profiles) read their keys from the
// provider's usual variable unless told otherwise, in every way a deployment gives them; a model
// of a conversation's own never reads the service's environment. Each key is checked where it
// arrives: the provider's official SDK sends it to a local server speaking its wire protocol.

const ref: ConversationRef = { tenant: 'acme', conversation: 'c-keys' };
const tools = new ToolRegistry(createBuiltinTools());
let server: LlmTestServer;
let dir: string;

beforeAll(async () => {
  server = await startTestServer();
  dir = await mkdtemp(join(tmpdir(), 'flotilla-model-keys-'));
});

afterAll(async () => {
  await server.close();
  await tools.close();
  await rm(dir, { recursive: true, force: true });
});

/** The key the local server received from one call of the spec's model (the default spec's unless given). */
async function keySent(
  catalog: AgentCatalog,
  environment: NodeJS.ProcessEnv,
  spec = catalog.defaultSpec,
): Promise<{ provider: string; key: string | undefined }> {
  const anthropic = spec.llm.provider === 'anthropic';
  server.requests.length = 0;
  server.enqueue(fixtureReply(loadFixture(anthropic ? 'anthropic-tool-call' : 'openai-chat-tool-call')));
  const agents = new ConversationAgents({ catalog, registry: tools, environment });
  const lookup = agents.of({ id: 'spec-1', seq: 2, type: 'agent_spec', spec } as never);
  if (!lookup.ok) throw new Error(lookup.reason);
  const model = await agents.model(ref, lookup.agent);
  await model.generate({ messages: firstTurn });
  expect(server.requests).toHaveLength(1);
  const { headers } = server.requests[0]!;
  // the Anthropic SDK sends its key as x-api-key or, in its newer versions, as a bearer token
  const key = (anthropic ? headers['x-api-key'] : undefined) ?? headers['authorization'];
  return { provider: spec.llm.provider, key: typeof key === 'string' ? key.replace(/^Bearer /, '') : undefined };
}

const retry = { maxAttempts: 1 };

describe("the deployment's default model reads the provider's usual variable", () => {
  it('FLOTILLA_LLM_*: OPENAI_API_KEY for the OpenAI providers, ANTHROPIC_API_KEY for Anthropic', async () => {
    for (const provider of ['openai-chat', 'openai-responses'] as const) {
      const environment = {
        FLOTILLA_LLM_PROVIDER: provider,
        FLOTILLA_LLM_MODEL: 'm',
        FLOTILLA_LLM_BASE_URL: server.baseURL,
        OPENAI_API_KEY: 'sk-openai-env',
        ANTHROPIC_API_KEY: 'sk-ant-env',
      };
      const catalog = loadAgentCatalog(environment);
      expect(() => checkModelAccess(catalog, environment)).not.toThrow();
      expect(catalog.keyVariables()).toEqual([
        { profile: 'default', provider, model: 'm', variable: 'OPENAI_API_KEY' },
      ]);
      if (provider === 'openai-chat')
        expect(await keySent(catalog, environment)).toEqual({ provider: 'openai-chat', key: 'sk-openai-env' });
    }
    const environment = {
      FLOTILLA_LLM_PROVIDER: 'anthropic',
      FLOTILLA_LLM_MODEL: 'claude',
      FLOTILLA_LLM_BASE_URL: server.url,
      OPENAI_API_KEY: 'sk-openai-env',
      ANTHROPIC_API_KEY: 'sk-ant-env',
    };
    const catalog = loadAgentCatalog(environment);
    checkModelAccess(catalog, environment);
    expect(await keySent(catalog, environment)).toEqual({ provider: 'anthropic', key: 'sk-ant-env' });
  });

  it('FLOTILLA_LLM_API_KEY_ENV names another variable; `none` is a server that takes no key', async () => {
    const named = {
      FLOTILLA_LLM_BASE_URL: server.baseURL,
      FLOTILLA_LLM_API_KEY_ENV: 'TEAM_KEY',
      TEAM_KEY: 'sk-team',
      OPENAI_API_KEY: 'sk-not-this',
    };
    expect(await keySent(loadAgentCatalog(named), named)).toEqual({ provider: 'openai-chat', key: 'sk-team' });
    const keyless = {
      FLOTILLA_LLM_BASE_URL: server.baseURL,
      FLOTILLA_LLM_API_KEY_ENV: 'none',
      OPENAI_API_KEY: 'sk-not-sent',
    };
    const catalog = loadAgentCatalog(keyless);
    expect(catalog.keyVariables()).toEqual([]);
    expect(() => checkModelAccess(catalog, {})).not.toThrow();
    expect(await keySent(catalog, keyless)).toEqual({ provider: 'openai-chat', key: 'none' });
  });

  it('FLOTILLA_AGENT_FILE: its llm without a key reads the provider variable; "apiKeyEnv": false reads none', async () => {
    const file = join(dir, 'agent.json');
    await writeFile(
      file,
      JSON.stringify({
        llm: { provider: 'anthropic', model: 'claude', baseURL: server.url, retry },
        tools: ['terminal', 'finish'],
      }),
    );
    const environment = { FLOTILLA_AGENT_FILE: file, ANTHROPIC_API_KEY: 'sk-ant-file' };
    expect(await keySent(loadAgentCatalog(environment), environment)).toEqual({
      provider: 'anthropic',
      key: 'sk-ant-file',
    });
    await writeFile(
      file,
      JSON.stringify({
        llm: { provider: 'openai-chat', model: 'local', baseURL: server.baseURL, apiKeyEnv: false, retry },
      }),
    );
    const keyless = { FLOTILLA_AGENT_FILE: file, OPENAI_API_KEY: 'sk-not-sent' };
    expect(await keySent(loadAgentCatalog(keyless), keyless)).toEqual({ provider: 'openai-chat', key: 'none' });
  });

  it("FLOTILLA_AGENT_CATALOG_FILE: a profile without a key reads its provider's variable", async () => {
    const file = join(dir, 'catalog.json');
    await writeFile(
      file,
      JSON.stringify({ profiles: { big: { provider: 'anthropic', model: 'claude-big', baseURL: server.url, retry } } }),
    );
    const environment = {
      FLOTILLA_LLM_BASE_URL: server.baseURL,
      FLOTILLA_AGENT_CATALOG_FILE: file,
      OPENAI_API_KEY: 'sk-openai',
      ANTHROPIC_API_KEY: 'sk-ant-profile',
    };
    const catalog = loadAgentCatalog(environment);
    checkModelAccess(catalog, environment);
    const { spec } = catalog.resolve({ spec: { llm: { profile: 'big' } } });
    expect(await keySent(catalog, environment, spec)).toEqual({ provider: 'anthropic', key: 'sk-ant-profile' });
    expect(await keySent(catalog, environment)).toEqual({ provider: 'openai-chat', key: 'sk-openai' });
  });
});

describe('a model with no key to be found', () => {
  it('stops the services that call it at start, naming the variable (the default model, and each profile)', async () => {
    const file = join(dir, 'catalog-missing.json');
    await writeFile(
      file,
      JSON.stringify({
        profiles: {
          big: { provider: 'anthropic', model: 'claude-big' },
          keyed: { provider: 'openai-chat', model: 'k', apiKeyEnv: 'KEYED_KEY' },
        },
      }),
    );
    expect(() => checkModelAccess(loadAgentCatalog({}), {})).toThrow(
      /^no API key for the deployment's models: the default model \(openai-chat gpt-4o-mini\) reads its key from OPENAI_API_KEY, which is not set: set OPENAI_API_KEY, .*FLOTILLA_LLM_API_KEY_ENV=none/,
    );
    expect(() =>
      checkModelAccess(loadAgentCatalog({ FLOTILLA_LLM_PROVIDER: 'anthropic', FLOTILLA_LLM_MODEL: 'claude' }), {
        OPENAI_API_KEY: 'sk',
      }),
    ).toThrow(/the default model \(anthropic claude\) reads its key from ANTHROPIC_API_KEY, which is not set/);
    // a blank value is no key
    expect(() => checkModelAccess(loadAgentCatalog({}), { OPENAI_API_KEY: '  ' })).toThrow(
      /OPENAI_API_KEY, which is not set/,
    );
    const environment = { FLOTILLA_AGENT_CATALOG_FILE: file, OPENAI_API_KEY: 'sk' };
    let message = '';
    try {
      checkModelAccess(loadAgentCatalog(environment), environment);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(
      'the model profile "big" (anthropic claude-big) reads its key from ANTHROPIC_API_KEY, which is not set',
    );
    expect(message).toContain(
      'the model profile "keyed" (openai-chat k) reads its key from KEYED_KEY, which is not set',
    );
    expect(message).not.toContain('default model');
  });

  it('stops them at start on a proxy variable that is not a URL, naming it', () => {
    expect(() =>
      checkModelAccess(loadAgentCatalog({}), { OPENAI_API_KEY: 'sk', HTTPS_PROXY: 'proxy.internal:3128' }),
    ).toThrow(/HTTPS_PROXY/);
    expect(() =>
      checkModelAccess(loadAgentCatalog({}), { OPENAI_API_KEY: 'sk', HTTPS_PROXY: 'http://proxy.internal:3128' }),
    ).not.toThrow();
  });
});

describe("a conversation's own model", () => {
  it("never reads the service's environment: without a secret it sends no key of the deployment's", async () => {
    const file = join(dir, 'catalog-custom.json');
    await writeFile(file, JSON.stringify({ limits: { customModels: { baseURLs: [server.baseURL] } } }));
    const environment = { FLOTILLA_AGENT_CATALOG_FILE: file, OPENAI_API_KEY: 'sk-deployment-secret' };
    const catalog = loadAgentCatalog(environment);
    const { spec } = catalog.resolve({
      spec: { llm: { provider: 'openai-chat', model: 'own', baseURL: server.baseURL, retry } },
    });
    expect(await keySent(catalog, environment, spec)).toEqual({ provider: 'openai-chat', key: 'none' });
  });
});
