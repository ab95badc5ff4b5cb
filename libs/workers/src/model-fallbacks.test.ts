import { Writable } from 'node:stream';
import type { AgentSpecEvent } from '@flotilla/events';
import {
  errorReply,
  fixtureReply,
  firstTurn,
  loadErrorBody,
  loadFixture,
  startTestServer,
  type LlmTestServer,
} from '@flotilla/llm/testing';
import type { ConversationRef } from '@flotilla/log';
import { ServiceMetrics } from '@flotilla/runtime';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadAgentCatalog } from './agent-settings.js';
import { ConversationAgents } from './conversation-agents.js';
import { fallbackReporter } from './fallback-reporter.js';

// A conversation's model and its fallbacks, each with its own key from where the operator says,
// called through the providers' official SDKs against local servers speaking their wire protocol.

const ref: ConversationRef = { tenant: 'acme', conversation: 'c-fallbacks' };
const tools = new ToolRegistry(createBuiltinTools());
const retry = { maxAttempts: 2, initialDelayMs: 5, maxDelayMs: 5, jitter: 0 };
const unavailable = errorReply(503, loadErrorBody('openai', 'server_error'));
let primary: LlmTestServer;
let backup: LlmTestServer;

beforeAll(async () => {
  primary = await startTestServer();
  backup = await startTestServer();
});

afterAll(async () => {
  await primary.close();
  await backup.close();
  await tools.close();
});

beforeEach(() => {
  primary.requests.length = 0;
  backup.requests.length = 0;
});

/** The deployment of these tests: its default model on `primary`, the `backup` profile on `backup`, the default falling back on it. */
function deployment(catalog: Record<string, unknown> = {}) {
  const environment = {
    FLOTILLA_AGENT: JSON.stringify({
      llm: { provider: 'openai-chat', model: 'house', baseURL: primary.baseURL, apiKeyEnv: 'HOUSE_API_KEY', retry },
    }),
    FLOTILLA_AGENT_CATALOG: JSON.stringify({
      profiles: {
        backup: {
          provider: 'anthropic',
          model: 'claude-backup',
          baseURL: backup.url,
          apiKeyEnv: 'BACKUP_API_KEY',
          retry,
        },
      },
      fallbacks: { default: ['backup'] },
      ...catalog,
    }),
    HOUSE_API_KEY: 'sk-house',
    BACKUP_API_KEY: 'sk-backup',
  };
  return { catalog: loadAgentCatalog(environment), environment };
}

/** Log lines a pino logger wrote, parsed. */
function capturedLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, sink), lines };
}

describe("a conversation's model with fallbacks", () => {
  it("moves a call its provider cannot make to the fallback, with the fallback profile's own key; the service counts and logs it", async () => {
    const { catalog, environment } = deployment();
    const metrics = new ServiceMetrics('step-worker');
    const { logger, lines } = capturedLogger();
    const agents = new ConversationAgents({
      catalog,
      registry: tools,
      environment,
      onFallback: fallbackReporter(metrics, logger),
    });
    const lookup = agents.of(undefined);
    if (!lookup.ok) throw new Error(lookup.reason);
    primary.enqueue(unavailable, unavailable);
    backup.enqueue(fixtureReply(loadFixture('anthropic-tool-call')));

    const result = await (await agents.model(ref, lookup.agent)).generate({ messages: firstTurn });
    expect(result.fallback).toEqual({ index: 0, provider: 'anthropic', model: 'claude-backup', profile: 'backup' });
    expect(primary.requests.map((request) => request.headers['authorization'])).toEqual([
      'Bearer sk-house',
      'Bearer sk-house',
    ]);
    expect(backup.requests).toHaveLength(1);
    expect(backup.requests[0]!.headers['x-api-key'] ?? backup.requests[0]!.headers['authorization']).toMatch(
      /sk-backup$/,
    );

    expect(await metrics.registry.getSingleMetricAsString('flotilla_llm_fallbacks_total')).toContain(
      'flotilla_llm_fallbacks_total{from="default",to="backup",reason="transient",service="step-worker"} 1',
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      tenant: 'acme',
      conversation: 'c-fallbacks',
      from: { profile: 'default', model: 'house' },
      to: { profile: 'backup', model: 'claude-backup' },
      code: 'transient',
      status: 503,
    });
    expect(JSON.stringify(lines)).not.toContain('sk-');
  });

  it('counts a model of the spec’s own as `own`, never by the name a user gave it', async () => {
    const { catalog, environment } = deployment({ limits: { customModels: { baseURLs: ['http://127.0.0.1:'] } } });
    const metrics = new ServiceMetrics('condenser');
    const agents = new ConversationAgents({
      catalog,
      registry: tools,
      environment,
      onFallback: fallbackReporter(metrics, pino({ level: 'silent' })),
    });
    const { spec } = catalog.resolve({
      spec: {
        llm: {
          provider: 'openai-chat',
          model: 'users-own-model',
          baseURL: primary.baseURL,
          retry,
          fallbacks: [{ profile: 'backup' }],
        },
      },
    });
    const lookup = agents.of({ id: 'spec-own', seq: 2, type: 'agent_spec', spec } as unknown as AgentSpecEvent);
    if (!lookup.ok) throw new Error(lookup.reason);
    primary.enqueue(unavailable, unavailable);
    backup.enqueue(fixtureReply(loadFixture('anthropic-tool-call')));
    const result = await (await agents.model(ref, lookup.agent)).generate({ messages: firstTurn });
    expect(result.fallback?.profile).toBe('backup');
    // the own model takes no key of the deployment's; its fallback, the operator's profile, takes the profile's
    expect(primary.requests[0]!.headers['authorization']).toBe('Bearer none');
    const counted = await metrics.registry.getSingleMetricAsString('flotilla_llm_fallbacks_total');
    expect(counted).toContain('from="own",to="backup",reason="transient"');
    expect(counted).not.toContain('users-own-model');
  });

  it('stops at a fallback that cannot be called (its profile gone), with the reason, as a model without fallbacks would', async () => {
    const { catalog, environment } = deployment();
    const agents = new ConversationAgents({ catalog, registry: tools, environment });
    // a spec logged while the deployment had a profile it no longer offers
    const logged = JSON.parse(JSON.stringify(catalog.defaultSpec)) as { llm: { fallbacks: Record<string, unknown>[] } };
    logged.llm.fallbacks = [{ ...logged.llm.fallbacks[0], profile: 'retired' }];
    const lookup = agents.of({
      id: 'spec-retired',
      seq: 2,
      type: 'agent_spec',
      spec: logged,
    } as unknown as AgentSpecEvent);
    if (!lookup.ok) throw new Error(lookup.reason);
    primary.enqueue(unavailable, unavailable);
    const error = await (
      await agents.model(ref, lookup.agent)
    )
      .generate({ messages: firstTurn })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      code: 'invalid_config',
      message: expect.stringContaining('the model profile "retired" is not offered by this deployment any more'),
    });
    expect(primary.requests).toHaveLength(2);
    expect(backup.requests).toEqual([]);
  });

  it('is the spec’s model alone when it has no fallbacks: nothing wraps it', async () => {
    const { catalog, environment } = deployment({ fallbacks: {} });
    const agents = new ConversationAgents({ catalog, registry: tools, environment });
    const lookup = agents.of(undefined);
    if (!lookup.ok) throw new Error(lookup.reason);
    const model = await agents.model(ref, lookup.agent);
    expect(await agents.model(ref, lookup.agent)).toBe(model);
    primary.enqueue(unavailable, unavailable);
    const error = await model.generate({ messages: firstTurn }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'transient', status: 503 });
    expect(backup.requests).toEqual([]);
  });
});
