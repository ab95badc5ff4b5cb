import { describe, expect, it } from 'vitest';
import { loadAgentCatalog, loadAgentSettings } from './agent-settings.js';

describe('loadAgentSettings', () => {
  it('names the variable to fix: a bad provider, bad JSON, and a tool the services cannot offer', () => {
    expect(() => loadAgentSettings({ FLOTILLA_LLM_PROVIDER: 'opanai' })).toThrow(
      /^invalid agent settings: FLOTILLA_LLM_PROVIDER: .*\(got "opanai"\)$/,
    );
    expect(() => loadAgentSettings({ FLOTILLA_AGENT: '{"llm":' })).toThrow(/^FLOTILLA_AGENT is not valid JSON/);
    const agent = (tools: string[]): NodeJS.ProcessEnv => ({
      FLOTILLA_AGENT: JSON.stringify({ llm: { provider: 'openai-chat', model: 'm' }, tools }),
    });
    expect(() => loadAgentSettings(agent(['terminal', 'github_search']))).toThrow(
      /^invalid agent settings: FLOTILLA_AGENT at tools: "github_search" is not a tool the services run \(the built-in ones: terminal, file_editor, .*; an MCP server's tools are offered by naming the server in mcpServers\)$/,
    );
    expect(loadAgentSettings(agent(['terminal', 'finish'])).tools).toEqual(['terminal', 'finish']);
    expect(loadAgentSettings({}).tools).toContain('terminal');
  });

  it('generates titles unless the settings turn them off, and refuses a setting that is not a boolean', () => {
    const agent = (titles: unknown): NodeJS.ProcessEnv => ({
      FLOTILLA_AGENT: JSON.stringify({ llm: { provider: 'openai-chat', model: 'm' }, titles }),
    });
    expect(loadAgentSettings({}).titles).toEqual({ generate: true });
    expect(loadAgentSettings(agent({ generate: false })).titles).toEqual({ generate: false });
    expect(() => loadAgentSettings(agent({ generate: 'no' }))).toThrow(
      /^invalid agent settings: FLOTILLA_AGENT at titles\.generate: /,
    );
    expect(() => loadAgentSettings(agent({ enabled: false }))).toThrow(
      /^invalid agent settings: FLOTILLA_AGENT at titles: /,
    );
  });
});

describe('loadAgentCatalog', () => {
  it("names the variable and the field of a fallback that is wrong, and writes a profile's fallbacks into its specs", () => {
    const profiles = { backup: { provider: 'openai-chat', model: 'backup-model', apiKeyEnv: 'BACKUP_KEY' } };
    const catalog = (fallbacks: unknown): NodeJS.ProcessEnv => ({
      FLOTILLA_AGENT_CATALOG: JSON.stringify({ profiles, fallbacks }),
    });
    expect(() => loadAgentCatalog(catalog({ default: ['backup', 'spare'] }))).toThrow(
      'invalid agent catalog: FLOTILLA_AGENT_CATALOG at fallbacks.default.1: no model profile "spare" (the profiles: default, backup)',
    );
    expect(() => loadAgentCatalog(catalog({ backup: ['backup'] }))).toThrow(
      'invalid agent catalog: FLOTILLA_AGENT_CATALOG at fallbacks.backup.0: "backup" is the profile itself: a profile falls back on others',
    );
    expect(() => loadAgentCatalog(catalog({ default: 'backup' }))).toThrow(
      /^invalid agent catalog: FLOTILLA_AGENT_CATALOG at fallbacks\.default: /,
    );
    expect(loadAgentCatalog(catalog({ default: ['backup'] })).defaultSpec.llm.fallbacks).toMatchObject([
      { profile: 'backup', model: 'backup-model' },
    ]);
  });
});
