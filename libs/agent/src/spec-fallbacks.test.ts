import { describe, expect, it } from 'vitest';
import { parseAgentConfig } from './agent-config.js';
import { AgentSpec, agentConfigOf, llmConfigOf } from './agent-spec.js';
import { AgentCatalog } from './spec-catalog.js';
import { SpecRefused } from './spec-checks.js';

const defaults = parseAgentConfig({
  llm: { provider: 'anthropic', model: 'house-model', baseURL: 'https://models.example/', apiKeyEnv: 'HOUSE_KEY' },
  tools: ['terminal', 'think', 'finish'],
});
const profiles = {
  backup: {
    provider: 'openai-chat',
    model: 'backup-model',
    baseURL: 'https://backup.example/v1',
    apiKeyEnv: 'BACKUP_KEY',
    vision: false,
  },
  big: { provider: 'openai-responses', model: 'big-model', apiKeyEnv: 'BIG_KEY', temperature: 1 },
};
const settings = {
  profiles,
  // backup's own fallback is never followed from default: each list is its profile's whole chain
  fallbacks: { default: ['backup'], big: ['default', 'backup'], backup: ['big'] },
  limits: { customModels: { baseURLs: ['https://own.example/'] } },
};

function refusal(run: () => unknown): { status: number; issues: { path: string; message: string }[] } {
  try {
    run();
  } catch (error) {
    if (error instanceof SpecRefused)
      return { status: error.status, issues: error.issues.map((issue) => ({ ...issue })) };
    throw error;
  }
  throw new Error('not refused');
}
const paths = (run: () => unknown): { status: number; paths: string[] } => {
  const refused = refusal(run);
  return { status: refused.status, paths: refused.issues.map((issue) => issue.path) };
};

describe("a profile's fallbacks", () => {
  const catalog = new AgentCatalog(defaults, settings);

  it("are written into every spec made from the profile, in order, as the fallbacks' models without keys or fallbacks of their own", () => {
    const spec = catalog.defaultSpec;
    expect(spec.llm).toMatchObject({ profile: 'default', model: 'house-model' });
    expect(spec.llm.fallbacks).toHaveLength(1);
    expect(spec.llm.fallbacks![0]).toMatchObject({
      profile: 'backup',
      provider: 'openai-chat',
      model: 'backup-model',
      baseURL: 'https://backup.example/v1',
      vision: false,
    });
    expect(spec.llm.fallbacks![0]).not.toHaveProperty('fallbacks');
    // what the fallback is called with: its settings, without where its key comes from
    const { profile: _profile, ...called } = spec.llm.fallbacks![0]!;
    expect(llmConfigOf(spec.llm.fallbacks![0]!)).toEqual(called);
    expect(JSON.stringify(spec)).not.toMatch(/_KEY/);
    const big = catalog.resolve({ spec: { llm: { profile: 'big', temperature: 0.2 } } }).spec;
    expect(big.llm).toMatchObject({ profile: 'big', temperature: 0.2 });
    expect(big.llm.fallbacks!.map((fallback) => [fallback.profile, fallback.model])).toEqual([
      ['default', 'house-model'],
      ['backup', 'backup-model'],
    ]);
    // tuning is the model's it is given with: each fallback is its profile as the operator set it
    expect(big.llm.fallbacks!.map((fallback) => fallback.temperature)).toEqual([undefined, undefined]);
    expect(AgentSpec.parse(JSON.parse(JSON.stringify(big)))).toEqual(big);
  });

  it('stay with a model tuned, and go with a model switched', () => {
    const big = catalog.resolve({ spec: { llm: { profile: 'big' } } }).spec;
    const tuned = catalog.resolve({ spec: { llm: { temperature: 0.7 } } }, big).spec;
    expect(tuned.llm).toMatchObject({ profile: 'big', temperature: 0.7, fallbacks: big.llm.fallbacks });
    const switched = catalog.resolve({ spec: { llm: { profile: 'backup' } } }, big).spec;
    expect(switched.llm.fallbacks!.map((fallback) => fallback.profile)).toEqual(['big']);
    expect(new AgentCatalog(defaults, { profiles }).defaultSpec.llm).not.toHaveProperty('fallbacks');
  });

  it('are the operator’s: a spec naming a profile cannot give its own', () => {
    expect(
      paths(() => catalog.resolve({ spec: { llm: { profile: 'big', fallbacks: [{ profile: 'backup' }] } } })),
    ).toEqual({ status: 400, paths: ['spec.llm.fallbacks'] });
  });

  it('are not the step’s configuration: the step runs the spec’s own model, the spec keeps the chain', () => {
    expect(agentConfigOf(catalog.defaultSpec).llm).not.toHaveProperty('fallbacks');
    expect(agentConfigOf(catalog.defaultSpec).llm).toMatchObject({ provider: 'anthropic', model: 'house-model' });
  });

  it('are listed with their profile where /v1/server-info shows the profiles', () => {
    expect(catalog.profiles()).toEqual([
      { name: 'backup', provider: 'openai-chat', model: 'backup-model', fallbacks: ['big'] },
      { name: 'big', provider: 'openai-responses', model: 'big-model', fallbacks: ['default', 'backup'] },
      { name: 'default', provider: 'anthropic', model: 'house-model', fallbacks: ['backup'] },
    ]);
  });

  it('are checked at start: each names profiles of the deployment, none twice, never the profile itself', () => {
    expect(refusal(() => new AgentCatalog(defaults, { profiles, fallbacks: { nobody: ['backup'] } })).issues).toEqual([
      {
        path: 'fallbacks.nobody',
        message: 'no model profile "nobody" to fall back from (the profiles: default, backup, big)',
      },
    ]);
    expect(
      refusal(() => new AgentCatalog(defaults, { profiles, fallbacks: { default: ['backup', 'gone'] } })).issues,
    ).toEqual([
      { path: 'fallbacks.default.1', message: 'no model profile "gone" (the profiles: default, backup, big)' },
    ]);
    expect(
      refusal(() => new AgentCatalog(defaults, { profiles, fallbacks: { big: ['backup', 'big'] } })).issues,
    ).toEqual([{ path: 'fallbacks.big.1', message: '"big" is the profile itself: a profile falls back on others' }]);
    expect(
      paths(() => new AgentCatalog(defaults, { profiles, fallbacks: { big: ['backup', 'default', 'backup'] } })),
    ).toEqual({ status: 400, paths: ['fallbacks.big.2'] });
    expect(paths(() => new AgentCatalog(defaults, { profiles, fallbacks: { big: [] } }))).toEqual({
      status: 400,
      paths: ['fallbacks.big'],
    });
    expect(paths(() => new AgentCatalog(defaults, { profiles, fallbacks: { big: 'backup' } }))).toEqual({
      status: 400,
      paths: ['fallbacks.big'],
    });
    expect(
      paths(
        () => new AgentCatalog(defaults, { profiles, fallbacks: { big: Array.from({ length: 9 }, () => 'backup') } }),
      ),
    ).toEqual({ status: 400, paths: ['fallbacks.big'] });
  });
});

describe("a spec's own model's fallbacks", () => {
  const catalog = new AgentCatalog(defaults, settings);
  const own = { provider: 'openai-chat', model: 'own', baseURL: 'https://own.example/v1', apiKeySecret: 'OWN_KEY' };
  const spare = {
    provider: 'anthropic',
    model: 'spare',
    baseURL: 'https://own.example/anthropic',
    apiKeySecret: 'SPARE_KEY',
    timeoutMs: 5_000,
  };

  it('are profiles (their models, not their fallbacks) or models of the spec’s own, each checked as the model is', () => {
    const { spec } = catalog.resolve({
      spec: { llm: { ...own, fallbacks: [{ profile: 'backup', temperature: 0.1 }, spare] } },
    });
    expect(spec.llm).toMatchObject({
      ...own,
      fallbacks: [{ profile: 'backup', model: 'backup-model', temperature: 0.1 }, spare],
    });
    expect(spec.llm.fallbacks![0]).not.toHaveProperty('fallbacks');
    // tuning the model keeps its fallbacks
    expect(catalog.resolve({ spec: { llm: { temperature: 0.4 } } }, spec).spec.llm).toMatchObject({
      temperature: 0.4,
      fallbacks: spec.llm.fallbacks,
    });
  });

  it('are refused, naming the fallback, outside the limits or past what a fallback may be', () => {
    expect(
      paths(() =>
        catalog.resolve({ spec: { llm: { ...own, fallbacks: [{ ...spare, baseURL: 'http://169.254.169.254/' }] } } }),
      ),
    ).toEqual({ status: 403, paths: ['spec.llm.fallbacks.0.baseURL'] });
    expect(paths(() => catalog.resolve({ spec: { llm: { ...own, fallbacks: [{ profile: 'nope' }] } } }))).toEqual({
      status: 400,
      paths: ['spec.llm.fallbacks.0.profile'],
    });
    expect(
      paths(() =>
        catalog.resolve({ spec: { llm: { ...own, fallbacks: [{ ...spare, fallbacks: [{ profile: 'backup' }] }] } } }),
      ),
    ).toEqual({ status: 400, paths: ['spec.llm.fallbacks.0.fallbacks'] });
    expect(paths(() => catalog.resolve({ spec: { llm: { ...own, fallbacks: [] } } }))).toEqual({
      status: 400,
      paths: ['spec.llm.fallbacks'],
    });
    expect(paths(() => catalog.resolve({ spec: { llm: { ...own, fallbacks: { profile: 'backup' } } } }))).toEqual({
      status: 400,
      paths: ['spec.llm.fallbacks'],
    });
    expect(
      paths(() => catalog.resolve({ spec: { llm: { ...own, fallbacks: [{ ...spare, apiKey: 'sk-live' }] } } })).status,
    ).toBe(400);
    expect(
      paths(() =>
        catalog.resolve({
          spec: { llm: { ...own, fallbacks: [{ ...spare, profile: undefined, apiKeySecret: 'X', colour: 'blue' }] } },
        }),
      ).paths,
    ).toEqual(['spec.llm.fallbacks.0.colour']);
  });

  it('are read back from a logged spec only as it was written: a fallback with fallbacks of its own is no spec', () => {
    const { spec } = catalog.resolve({ spec: { llm: { ...own, fallbacks: [spare] } } });
    const logged = JSON.parse(JSON.stringify(spec)) as { llm: { fallbacks: Record<string, unknown>[] } };
    logged.llm.fallbacks[0]!['fallbacks'] = [spare];
    expect(AgentSpec.safeParse(logged).success).toBe(false);
  });
});
