import { draftEvent, type AgentSpecEvent } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { parseAgentConfig } from './agent-config.js';
import { AgentSpec, agentConfigOf, readAgentSpec } from './agent-spec.js';
import { AgentCatalog } from './spec-catalog.js';
import { SpecRefused } from './spec-checks.js';

const defaults = parseAgentConfig({
  llm: { provider: 'openai-chat', model: 'house-model', baseURL: 'https://models.example/v1', apiKeyEnv: 'HOUSE_KEY' },
  tools: ['terminal', 'think', 'finish'],
});
const settings = {
  profiles: {
    big: {
      provider: 'anthropic',
      model: 'big-model',
      apiKeyEnv: 'BIG_KEY',
      prices: { inputPerMillion: 3, outputPerMillion: 15 },
    },
  },
  templates: { reviewer: { llm: { profile: 'big', temperature: 0.2 }, tools: ['terminal', 'finish'] } },
  limits: {
    customModels: { providers: ['openai-chat'], baseURLs: ['https://own.example/'] },
    maxIterationsPerRun: 600,
    maxBudgetPerRunUsd: 5,
  },
};

/** The refusal a request meets: its status and each field it names. */
function refusal(run: () => unknown): { status: number; paths: string[] } {
  try {
    run();
  } catch (error) {
    if (error instanceof SpecRefused) return { status: error.status, paths: error.issues.map((issue) => issue.path) };
    throw error;
  }
  throw new Error('not refused');
}

describe('AgentCatalog', () => {
  const catalog = new AgentCatalog(defaults, settings);

  it('makes the default spec from the agent settings: their model as the `default` profile, no key, every default filled in, within the limits', () => {
    const spec = catalog.defaultSpec;
    expect(spec).toMatchObject({
      version: 1,
      llm: { profile: 'default', provider: 'openai-chat', model: 'house-model', baseURL: 'https://models.example/v1' },
      tools: ['terminal', 'think', 'finish'],
    });
    expect(spec.llm).not.toHaveProperty('apiKeyEnv');
    // the operator's budget applies to a spec that sets none
    expect(spec.limits.maxBudgetPerRunUsd).toBe(5);
    expect(AgentSpec.parse(JSON.parse(JSON.stringify(spec)))).toEqual(spec);
  });

  it("fills a profile's model in, keeping only its tuning from the request, and its key only where it is called", () => {
    const { spec } = catalog.resolve({ spec: { llm: { profile: 'big', maxOutputTokens: 1_000 } } });
    expect(spec.llm).toMatchObject({
      profile: 'big',
      provider: 'anthropic',
      model: 'big-model',
      maxOutputTokens: 1_000,
      prices: { inputPerMillion: 3 },
    });
    expect(JSON.stringify(spec)).not.toContain('BIG_KEY');
    expect(catalog.profileKey(spec.llm)).toEqual({ ok: true, key: { apiKeyEnv: 'BIG_KEY' } });
    // a spec pointing elsewhere than its profile now does never gets the profile's key
    expect(catalog.profileKey({ ...spec.llm, baseURL: 'https://elsewhere.example/v1' })).toMatchObject({ ok: false });
    expect(catalog.profileKey({ ...spec.llm, profile: 'gone' })).toMatchObject({ ok: false });
    expect(
      refusal(() =>
        catalog.resolve({ spec: { llm: { profile: 'big', model: 'other', baseURL: 'https://x.example/' } } }),
      ),
    ).toEqual({ status: 400, paths: ['spec.llm.model', 'spec.llm.baseURL'] });
  });

  it('starts from a template, and replaces each top-level field a request gives whole', () => {
    const { spec, template } = catalog.resolve({ template: 'reviewer', spec: { tools: ['think', 'finish'] } });
    expect(template).toBe('reviewer');
    expect(spec).toMatchObject({ llm: { profile: 'big', temperature: 0.2 }, tools: ['think', 'finish'] });
    const switched = catalog.resolve({ spec: { llm: { profile: 'default' } } }, spec).spec;
    expect(switched).toMatchObject({ llm: { profile: 'default', model: 'house-model' }, tools: ['think', 'finish'] });
    expect(switched.llm.temperature).toBeUndefined();
    expect(catalog.templateNames()).toEqual(['reviewer']);
  });

  it('takes an llm of tuning only as tuning of the model in force (what --set llm.temperature=0.5 sends), keeping its earlier tuning', () => {
    const reviewer = catalog.resolve({ template: 'reviewer' }).spec;
    const tuned = catalog.resolve({ spec: { llm: { maxOutputTokens: 500 } } }, reviewer).spec;
    expect(tuned.llm).toMatchObject({ profile: 'big', model: 'big-model', temperature: 0.2, maxOutputTokens: 500 });
    expect(catalog.resolve({ spec: { llm: { temperature: 0.5 } } }).spec.llm).toMatchObject({
      profile: 'default',
      model: 'house-model',
      temperature: 0.5,
    });
    const own = catalog.resolve({
      spec: {
        llm: { provider: 'openai-chat', model: 'own', baseURL: 'https://own.example/v1', apiKeySecret: 'OWN_KEY' },
      },
    }).spec;
    expect(catalog.resolve({ spec: { llm: { temperature: 0.1 } } }, own).spec.llm).toMatchObject({
      model: 'own',
      apiKeySecret: 'OWN_KEY',
      temperature: 0.1,
    });
    // anything but tuning is a whole model, as before
    expect(refusal(() => catalog.resolve({ spec: { llm: { model: 'big-model' } } }, reviewer)).status).toBe(403);
  });

  it('takes a model of the spec’s own only where the operator allows it, its key a secret’s name', () => {
    const own = { provider: 'openai-chat', model: 'own', baseURL: 'https://own.example/v1', apiKeySecret: 'OWN_KEY' };
    expect(catalog.resolve({ spec: { llm: own } }).spec.llm).toMatchObject(own);
    expect(refusal(() => catalog.resolve({ spec: { llm: { ...own, baseURL: 'http://169.254.169.254/' } } }))).toEqual({
      status: 403,
      paths: ['spec.llm.baseURL'],
    });
    expect(refusal(() => catalog.resolve({ spec: { llm: { ...own, provider: 'anthropic' } } }))).toEqual({
      status: 403,
      paths: ['spec.llm.provider'],
    });
    const narrow = new AgentCatalog(defaults, {
      limits: { customModels: { models: ['own'], baseURLs: ['https://own.example/'] } },
    });
    expect(narrow.resolve({ spec: { llm: own } }).spec.llm.model).toBe('own');
    expect(refusal(() => narrow.resolve({ spec: { llm: { ...own, model: 'other' } } }))).toEqual({
      status: 403,
      paths: ['spec.llm.model'],
    });
    // a key is never a value in a spec, nor a variable of the services' environment
    expect(refusal(() => catalog.resolve({ spec: { llm: { ...own, apiKey: 'sk-live' } } })).status).toBe(400);
    expect(
      refusal(() => catalog.resolve({ spec: { llm: { ...own, apiKeyEnv: 'FLOTILLA_NATS_PASSWORD' } } })).status,
    ).toBe(400);
    expect(refusal(() => new AgentCatalog(defaults).resolve({ spec: { llm: own } }))).toEqual({
      status: 403,
      paths: ['spec.llm.profile'],
    });
  });

  it('refuses what the limits do not allow and what the schema does not know, naming each field', () => {
    expect(refusal(() => catalog.resolve({ spec: { tools: ['terminal', 'web_search'] } }))).toEqual({
      status: 403,
      paths: ['spec.tools'],
    });
    expect(refusal(() => catalog.resolve({ spec: { limits: { maxIterationsPerRun: 601 } } }))).toEqual({
      status: 403,
      paths: ['spec.limits.maxIterationsPerRun'],
    });
    expect(refusal(() => catalog.resolve({ spec: { limits: { maxBudgetPerRunUsd: 50 } } }))).toEqual({
      status: 403,
      paths: ['spec.limits.maxBudgetPerRunUsd'],
    });
    expect(refusal(() => catalog.resolve({ spec: { colour: 'blue' } })).paths).toEqual(['spec.colour']);
    expect(refusal(() => catalog.resolve({ spec: { confirmation: { mode: 'sometimes' } } })).paths[0]).toMatch(
      /^spec\.confirmation/,
    );
    expect(refusal(() => catalog.resolve({ template: 'missing' }))).toEqual({ status: 400, paths: ['template'] });
  });

  it('checks its own templates and profiles at start, naming them', () => {
    expect(refusal(() => new AgentCatalog(defaults, { templates: { broken: { tools: ['nope'] } } }))).toEqual({
      status: 403,
      paths: ['templates.broken.tools'],
    });
    expect(
      refusal(() => new AgentCatalog(defaults, { profiles: { default: { provider: 'openai-chat', model: 'x' } } }))
        .paths,
    ).toEqual(['profiles.default']);
    expect(refusal(() => new AgentCatalog(defaults, { limits: { maxIterationsPerRun: 10 } })).paths).toEqual([
      'defaults.limits.maxIterationsPerRun',
    ]);
  });
});

describe('readAgentSpec', () => {
  const ref = { tenant: 'acme', conversation: 'c1' };
  const event = (spec: Record<string, unknown>, seq = 2): AgentSpecEvent =>
    ({
      ...draftEvent({ ...ref, source: 'user' }, 'agent_spec', { spec: spec as AgentSpecEvent['spec'], reason: 'test' }),
      seq,
    }) as AgentSpecEvent;

  it('reads a spec as the gateway wrote it, once per event, and gives the step its configuration', () => {
    const logged = event(
      JSON.parse(JSON.stringify(new AgentCatalog(defaults, settings).defaultSpec)) as Record<string, unknown>,
    );
    const read = readAgentSpec(logged);
    expect(read.ok && agentConfigOf(read.spec).llm).toMatchObject({ provider: 'openai-chat', model: 'house-model' });
    expect(read.ok && agentConfigOf(read.spec).llm).not.toHaveProperty('profile');
    expect(readAgentSpec(logged)).toBe(read);
  });

  it('refuses a spec of another schema version or shape, saying where', () => {
    expect(readAgentSpec(event({ version: 2, llm: { provider: 'openai-chat', model: 'm' } }, 7))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^the agent spec at seq 7 is not one this build reads: version: /),
    });
    expect(
      readAgentSpec(event({ version: 1, llm: { provider: 'openai-chat', model: 'm', apiKey: 'sk' } })),
    ).toMatchObject({ ok: false });
  });
});
