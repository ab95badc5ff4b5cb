import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parseAgentConfig } from './agent-config.js';
import { AGENT_SPEC_SCHEMA_FILE_NAME, renderAgentSpecSchema } from './agent-spec-schema.js';
import { AgentCatalog } from './spec-catalog.js';

const SCHEMA_PATH = join(import.meta.dirname, '..', 'schema', AGENT_SPEC_SCHEMA_FILE_NAME);

describe("the agent spec's published JSON Schema", () => {
  it('is up to date with the zod schema (regenerate with `npm run schema`)', () => {
    expect(readFileSync(SCHEMA_PATH, 'utf8')).toBe(renderAgentSpecSchema());
  });

  it('accepts the specs a catalog makes and refuses what the zod schema refuses', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    const validate = ajv.compile(JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as object);
    const catalog = new AgentCatalog(
      parseAgentConfig({ llm: { provider: 'openai-chat', model: 'm', apiKeyEnv: 'M_API_KEY' } }),
      {
        profiles: { big: { provider: 'anthropic', model: 'big' } },
        fallbacks: { big: ['default'] },
        limits: { customModels: { baseURLs: ['https://own.example/'] } },
      },
    );
    const specs = [
      catalog.defaultSpec,
      catalog.resolve({
        spec: {
          llm: { profile: 'big', temperature: 0.3 },
          tools: ['terminal', 'finish'],
          confirmation: { mode: 'risky' },
        },
      }).spec,
      catalog.resolve({
        spec: {
          llm: { provider: 'openai-chat', model: 'own', baseURL: 'https://own.example/v1', apiKeySecret: 'OWN_KEY' },
        },
      }).spec,
      catalog.resolve({
        spec: {
          llm: {
            provider: 'openai-chat',
            model: 'own',
            baseURL: 'https://own.example/v1',
            fallbacks: [
              { profile: 'big' },
              { provider: 'anthropic', model: 'spare', baseURL: 'https://own.example/a' },
            ],
          },
        },
      }).spec,
    ];
    expect(specs[1]!.llm.fallbacks).toHaveLength(1);
    for (const spec of specs)
      expect(validate(JSON.parse(JSON.stringify(spec))), JSON.stringify(validate.errors)).toBe(true);
    const base = JSON.parse(JSON.stringify(catalog.defaultSpec)) as Record<string, unknown>;
    expect(validate({ ...base, version: 2 })).toBe(false);
    expect(validate({ ...base, llm: { ...(base['llm'] as object), apiKey: 'sk-live' } })).toBe(false);
    expect(validate({ ...base, colour: 'blue' })).toBe(false);
    // a fallback has no fallbacks of its own, nor a key
    const fallback = JSON.parse(JSON.stringify(specs[3]!.llm.fallbacks![1])) as Record<string, unknown>;
    expect(validate({ ...base, llm: { ...(base['llm'] as object), fallbacks: [fallback] } })).toBe(true);
    expect(
      validate({ ...base, llm: { ...(base['llm'] as object), fallbacks: [{ ...fallback, fallbacks: [fallback] }] } }),
    ).toBe(false);
    expect(
      validate({ ...base, llm: { ...(base['llm'] as object), fallbacks: [{ ...fallback, apiKeyEnv: 'SPARE_KEY' }] } }),
    ).toBe(false);
  });
});
