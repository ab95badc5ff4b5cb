import type {
  ConversationSpec,
  CreateConversationBody,
  EventPage,
  SearchEventsQuery,
  UpdateSpecBody,
} from '@flotilla/api';
import type { Event } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { parseCliArgs } from './args.js';
import type { CliClient } from './cli-client.js';
import { CliError } from './errors.js';
import { recordedRequests } from './replay-command.js';
import { runCli } from './run-cli.js';
import { specFieldsOf } from './spec-args.js';
import { Captured } from './test-support/fake-stream.js';
import { message, statusChange, testEvent } from './test-support/events.js';

// as the replay command loads it: only when needed
const { AGENT_SPEC_VERSION, replayRequests } = await import('@flotilla/agent');

const command = (...argv: string[]) => parseCliArgs(argv).command;
function usageMessage(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    return (error as CliError).message;
  }
  throw new Error('no usage error');
}

const specInForce: ConversationSpec = {
  spec: {
    version: AGENT_SPEC_VERSION,
    llm: { provider: 'openai-chat', model: 'second-brain', profile: 'second', temperature: 0.1 },
    tools: ['terminal', 'finish'],
    confirmation: { mode: 'risky', threshold: 'medium' },
    limits: { maxIterationsPerRun: 50 },
  },
  seq: 7,
  template: 'reviewer',
  reason: 'model switched by the user',
};

type Call = [string, ...unknown[]];

/** A fake gateway client recording the calls of the spec commands. */
function recordingClient(calls: Call[], log: readonly Event[] = []): Partial<CliClient> {
  return {
    createConversation: async (body?: CreateConversationBody) => {
      calls.push(['createConversation', body]);
      return { conversation: { id: body?.id ?? 'new-one' } as never, created: true };
    },
    getSpec: async (id: string) => {
      calls.push(['getSpec', id]);
      return specInForce;
    },
    updateSpec: async (id: string, body: UpdateSpecBody) => {
      calls.push(['updateSpec', id, body]);
      return { ...specInForce, seq: 9, reason: body.reason ?? null };
    },
    // two events a page, in seq order, as the gateway pages them
    searchEvents: async (id: string, query: SearchEventsQuery = {}): Promise<EventPage> => {
      calls.push(['searchEvents', id, query]);
      const from = query.cursor === undefined ? 0 : Number(query.cursor);
      const items = log.slice(from, from + 2);
      return { items, next_cursor: from + 2 < log.length ? String(from + 2) : null, prev_cursor: null };
    },
  };
}

async function run(argv: string[], client: Partial<CliClient>, files: Record<string, string> = {}) {
  const stdout = new Captured();
  const stderr = new Captured();
  const code = await runCli(argv, {
    stdout,
    stderr,
    env: { FLOTILLA_URL: 'http://gw:1', FLOTILLA_API_KEY: 'k' },
    readConfig: () => undefined,
    createClient: () => client as CliClient,
    input: {
      readStdin: () => Promise.reject(new Error('no stdin in this test')),
      readFile: async (path) => {
        const text = files[path];
        if (text === undefined) throw new Error(`ENOENT: no such file, open '${path}'`);
        return text;
      },
    },
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** A conversation's log with one step (its system prompt, its llm_usage): what replay rebuilds. */
function loggedStep(): Event[] {
  const spec = {
    version: AGENT_SPEC_VERSION,
    llm: { provider: 'openai-chat', model: 'brain', baseURL: 'http://127.0.0.1:9/v1' },
    tools: ['think', 'finish'],
  };
  return [
    testEvent('agent_spec', 1, { spec, reason: 'conversation created' }, 'user'),
    message(2, 'hello', 'user'),
    statusChange(3, 'running'),
    testEvent('system_prompt', 4, {
      static_prompt: 'You are a test.',
      dynamic_prompt: "Today's date is 2026-11-29 (UTC).",
      tools: [],
    }),
    testEvent(
      'llm_usage',
      5,
      {
        model: 'brain',
        purpose: 'step',
        prompt_tokens: 10,
        completion_tokens: 2,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        latency_ms: 5,
        cost_usd: 0,
        response_id: 'r1',
      },
      'system',
    ),
    message(6, 'hi'),
  ];
}

describe('parsing the spec commands', () => {
  it('reads create from a template and a spec file, spec, model and replay', () => {
    expect(
      command('create', '--template', 'reviewer', '--spec', 'agent.json', '--message', 'go', '--run'),
    ).toMatchObject({ name: 'create', template: 'reviewer', specFile: 'agent.json', run: true });
    expect(command('spec', 'c1')).toEqual({ name: 'spec', id: 'c1', json: false, settings: [] });
    expect(command('spec', 'c1', '--json')).toMatchObject({ json: true });
    expect(
      command(
        'spec',
        'c1',
        '--set',
        'llm.profile=fast',
        '--set',
        'limits.maxIterationsPerRun=20',
        '--reason',
        'faster',
      ),
    ).toEqual({
      name: 'spec',
      id: 'c1',
      json: false,
      settings: ['llm.profile=fast', 'limits.maxIterationsPerRun=20'],
      reason: 'faster',
    });
    expect(command('model', 'c1', 'fast')).toEqual({ name: 'model', id: 'c1', profile: 'fast' });
    expect(command('replay', 'c1', '--check', 'requests.jsonl')).toEqual({
      name: 'replay',
      id: 'c1',
      check: 'requests.jsonl',
    });
  });

  it('says what is wrong', () => {
    expect(usageMessage(() => command('model', 'c1'))).toContain('model needs ID and PROFILE');
    expect(usageMessage(() => command('model', 'c1', 'Fast Model'))).toContain(
      'PROFILE "Fast Model" is not a template or profile name',
    );
    expect(usageMessage(() => command('create', '--template', '../x'))).toContain(
      '--template "../x" is not a template or profile name',
    );
    expect(usageMessage(() => command('spec', 'c1', '--reason', 'why'))).toContain('--reason goes with a change');
    expect(usageMessage(() => command('spec', 'c1', '--set', 'a=1', '--json'))).toContain('spec --json shows the spec');
    expect(usageMessage(() => command('replay', 'c1', '--set', 'a=1'))).toBe('replay does not take --set');
  });

  it('turns --set settings into spec fields, values as JSON where they are JSON', () => {
    expect(
      specFieldsOf([
        'llm.profile=fast',
        'llm.temperature=0.2',
        'tools=["terminal","finish"]',
        'confirmation={"mode":"always"}',
        'prompt.context=a = b',
      ]),
    ).toEqual({
      llm: { profile: 'fast', temperature: 0.2 },
      tools: ['terminal', 'finish'],
      confirmation: { mode: 'always' },
      prompt: { context: 'a = b' },
    });
    expect(usageMessage(() => specFieldsOf(['llm.profile']))).toContain('--set takes PATH=VALUE');
    expect(usageMessage(() => specFieldsOf(['llm..x=1']))).toContain('--set takes PATH=VALUE');
    expect(usageMessage(() => specFieldsOf(['tools=[]', 'tools=["x"]']))).toContain('given twice');
    expect(usageMessage(() => specFieldsOf(['llm=1', 'llm.model=x']))).toContain('llm is already set to a value');
  });

  it('reads recorded requests as JSON lines with a body and an optional seq', () => {
    expect(recordedRequests('{"body":"{}"}\n\n{"seq":4,"body":"[]"}\n', 'f')).toEqual([
      { body: '{}' },
      { seq: 4, body: '[]' },
    ]);
    expect(usageMessage(() => recordedRequests('{"body":1}', 'f'))).toBe(
      '--check f:1: each line is an object with the request\'s "body" as a string',
    );
    expect(usageMessage(() => recordedRequests('{}\nnot json', 'f'))).toContain('--check f:1');
    expect(usageMessage(() => recordedRequests('{"body":"x","seq":0}', 'f'))).toContain(
      '"seq" must be a positive whole number',
    );
  });
});

describe('running the spec commands', () => {
  it('creates from a template and a spec file', async () => {
    const calls: Call[] = [];
    const file = JSON.stringify({ llm: { profile: 'second' }, tools: ['terminal', 'finish'] });
    const result = await run(
      ['create', '--id', 'c1', '--template', 'reviewer', '--spec', 'agent.json'],
      recordingClient(calls),
      { 'agent.json': file },
    );
    expect(result).toMatchObject({ code: 0, stdout: 'c1\n' });
    expect(calls).toEqual([
      [
        'createConversation',
        { template: 'reviewer', spec: { llm: { profile: 'second' }, tools: ['terminal', 'finish'] }, id: 'c1' },
      ],
    ]);
    const missing = await run(['create', '--spec', 'nowhere.json'], recordingClient([]));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("flotilla: --spec nowhere.json: ENOENT: no such file, open 'nowhere.json'");
    const notObject = await run(['create', '--spec', 'list.json'], recordingClient([]), {
      'list.json': '["terminal"]',
    });
    expect(notObject.stderr).toContain('--spec list.json must hold a JSON object of spec fields');
  });

  it('shows the spec in force, and its JSON', async () => {
    const calls: Call[] = [];
    const shown = await run(['spec', 'c1'], recordingClient(calls));
    expect(shown.code).toBe(0);
    expect(shown.stdout.split('\n')).toEqual([
      'spec:      seq 7 (model switched by the user)',
      'template:  reviewer',
      'model:     openai-chat second-brain (profile second), temperature 0.1',
      'tools:     terminal, finish',
      'confirm:   risky (at medium risk)',
      'limits:    50 steps per run',
      '',
    ]);
    expect(JSON.parse((await run(['spec', 'c1', '--json'], recordingClient(calls))).stdout)).toEqual(specInForce);
    expect(calls).toEqual([
      ['getSpec', 'c1'],
      ['getSpec', 'c1'],
    ]);
  });

  it('switches the model to a profile, and changes the spec by template, settings and file', async () => {
    const calls: Call[] = [];
    const switched = await run(['model', 'c1', 'second'], recordingClient(calls));
    expect(switched.code).toBe(0);
    expect(switched.stdout).toContain('spec:      seq 9 (model switched to the profile second)');
    await run(
      [
        'spec',
        'c1',
        '--template',
        'reviewer',
        '--set',
        'llm.profile=second',
        '--set',
        'llm.temperature=0.1',
        '--spec',
        'limits.json',
        '--reason',
        'tighter',
      ],
      recordingClient(calls),
      {
        'limits.json': '{"limits":{"maxIterationsPerRun":20}}',
      },
    );
    expect(calls).toEqual([
      ['updateSpec', 'c1', { spec: { llm: { profile: 'second' } }, reason: 'model switched to the profile second' }],
      [
        'updateSpec',
        'c1',
        {
          template: 'reviewer',
          spec: { limits: { maxIterationsPerRun: 20 }, llm: { profile: 'second', temperature: 0.1 } },
          reason: 'tighter',
        },
      ],
    ]);
    const twice = await run(
      ['spec', 'c1', '--set', 'limits.maxIterationsPerRun=5', '--spec', 'limits.json'],
      recordingClient([]),
      { 'limits.json': '{"limits":{}}' },
    );
    expect(twice.stderr).toContain('--spec both give the field limits');
  });

  it("replays a conversation's steps from its log, read page by page, and checks them against recorded requests", async () => {
    const log = loggedStep();
    const calls: Call[] = [];
    const replayed = await run(['replay', 'c1'], recordingClient(calls, log));
    expect(replayed.code, replayed.stderr).toBe(0);
    const lines = replayed.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const [expected] = replayRequests(log);
    expect(lines).toEqual([{ seq: 5, spec_seq: 1, provider: 'openai-chat', model: 'brain', body: expected!.body }]);
    expect(JSON.parse(expected!.body)).toMatchObject({
      model: 'brain',
      messages: [{ role: 'system' }, { role: 'user', content: 'hello' }],
      stream: true,
    });
    expect(calls.filter(([method]) => method === 'searchEvents')).toHaveLength(3);

    const same = await run(['replay', 'c1', '--check', 'recorded.jsonl'], recordingClient([], log), {
      'recorded.jsonl': `${JSON.stringify({ body: expected!.body })}\n`,
    });
    expect(same).toMatchObject({
      code: 0,
      stdout: 'seq 5: same, byte for byte\n',
      stderr: '1 of 1 steps rebuilt byte for byte\n',
    });
    const changed = expected!.body.replace('"hello"', '"hellO"');
    const different = await run(['replay', 'c1', '--check', 'recorded.jsonl'], recordingClient([], log), {
      'recorded.jsonl': `${JSON.stringify({ seq: 5, body: changed })}\n`,
    });
    expect(different.code).toBe(1);
    expect(different.stdout).toMatch(
      /^seq 5: differs from byte \d+: rebuilt ….*"hello".*… \(\d+ bytes\), recorded ….*"hellO".*… \(\d+ bytes\)\n$/,
    );
    const none = await run(['replay', 'c1', '--check', 'recorded.jsonl'], recordingClient([], log), {
      'recorded.jsonl': '',
    });
    expect(none).toMatchObject({ code: 1, stdout: 'seq 5: no recorded request for this step\n' });
  });

  it('says why a log cannot be replayed', async () => {
    const result = await run(['replay', 'c1'], recordingClient([], loggedStep().slice(1)));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('the log must be whole, from seq 1');
  });
});
