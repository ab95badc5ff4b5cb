import { describe, expect, it } from 'vitest';
import { loadAgentSettings } from './agent-settings.js';

describe('loadAgentSettings', () => {
  it('names the variable to fix: a bad provider, bad JSON, and a tool the services cannot offer', () => {
    expect(() => loadAgentSettings({ FLOTILLA_LLM_PROVIDER: 'opanai' })).toThrow(/^invalid agent settings: FLOTILLA_LLM_PROVIDER: .*\(got "opanai"\)$/);
    expect(() => loadAgentSettings({ FLOTILLA_AGENT: '{"llm":' })).toThrow(/^FLOTILLA_AGENT is not valid JSON/);
    const agent = (tools: string[]): NodeJS.ProcessEnv => ({ FLOTILLA_AGENT: JSON.stringify({ llm: { provider: 'openai-chat', model: 'm' }, tools }) });
    expect(() => loadAgentSettings(agent(['terminal', 'github_search']))).toThrow(
      /^invalid agent settings: FLOTILLA_AGENT at tools: "github_search" is not a tool the services run \(the built-in ones: terminal, file_editor, .*; an MCP server's tools are offered by naming the server in mcpServers\)$/,
    );
    expect(loadAgentSettings(agent(['terminal', 'finish'])).tools).toEqual(['terminal', 'finish']);
    expect(loadAgentSettings({}).tools).toContain('terminal');
  });

  it('generates titles unless the settings turn them off, and refuses a setting that is not a boolean', () => {
    const agent = (titles: unknown): NodeJS.ProcessEnv => ({ FLOTILLA_AGENT: JSON.stringify({ llm: { provider: 'openai-chat', model: 'm' }, titles }) });
    expect(loadAgentSettings({}).titles).toEqual({ generate: true });
    expect(loadAgentSettings(agent({ generate: false })).titles).toEqual({ generate: false });
    expect(() => loadAgentSettings(agent({ generate: 'no' }))).toThrow(/^invalid agent settings: FLOTILLA_AGENT at titles\.generate: /);
    expect(() => loadAgentSettings(agent({ enabled: false }))).toThrow(/^invalid agent settings: FLOTILLA_AGENT at titles: /);
  });
});
