// The OpenAI-compatible endpoint's reading of a request: which fields it takes, ignores and
// refuses; the run's message made of the messages; what `model` names; the streamed answer's
// pieces. (Through the services with OpenAI's SDK: tests/e2e/openai-endpoint.test.ts.)
import { MAX_MESSAGE_CHARS } from '@flotilla/api';
import type { Event } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { AnswerPieces } from './openai-answer-pieces.js';
import { OpenAiError } from './openai-errors.js';
import { agentChoiceOf, modelEntries } from './openai-models.js';
import { parseChatRequest } from './openai-request.js';
import { LATEST_MESSAGE_HEADING, runMessageText, TRANSCRIPT_OPENING } from './openai-transcript.js';

const refusal = (body: unknown): OpenAiError => {
  try {
    parseChatRequest(body);
  } catch (error) {
    if (error instanceof OpenAiError) return error;
    throw error;
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
};

const user = (content: unknown) => ({ role: 'user', content });

describe('parseChatRequest', () => {
  it('takes text messages, stream and include_usage, and ignores the sampling settings', () => {
    const request = parseChatRequest({
      model: 'coder',
      messages: [
        { role: 'system', content: 'Be terse.' },
        user([
          { type: 'text', text: 'first' },
          { type: 'text', text: 'second' },
        ]),
      ],
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
      top_p: 1,
      max_tokens: 100,
      seed: 7,
      n: 1,
      user: 'end-user-1',
      tools: [],
      stop: null,
    });
    expect(request).toEqual({
      model: 'coder',
      messages: [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'first\nsecond' },
      ],
      stream: true,
      includeUsage: true,
    });
    expect(parseChatRequest({ model: 'coder', messages: [user('hi')] })).toMatchObject({
      stream: false,
      includeUsage: false,
    });
  });

  it('refuses images, tools, stops, several choices and unknown fields, naming the field', () => {
    const image = refusal({
      model: 'coder',
      messages: [user([{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }])],
    });
    expect(image).toMatchObject({ status: 400, param: 'messages.0.content.0' });
    expect(image.message).toMatch(/"image_url" parts are not supported/);
    expect(refusal({ model: 'coder', messages: [user('x')], tools: [{ type: 'function' }] })).toMatchObject({
      status: 400,
      param: 'tools',
      message: expect.stringMatching(/^tools: the agent runs with its own tools/),
    });
    expect(refusal({ model: 'coder', messages: [user('x')], stop: ['\n'] }).param).toBe('stop');
    expect(refusal({ model: 'coder', messages: [user('x')], n: 2 }).message).toMatch(/one choice/);
    expect(refusal({ model: 'coder', messages: [user('x')], response_format: { type: 'json_object' } }).param).toBe(
      'response_format.type',
    );
    expect(refusal({ model: 'coder', messages: [user('x')], frobnicate: true }).message).toMatch(
      /unsupported field "frobnicate"/,
    );
    expect(refusal({ model: 'coder', messages: [{ role: 'critic', content: 'x' }] }).message).toMatch(
      /role must be one of system, developer, user, assistant, tool/,
    );
    expect(refusal({ model: 'coder', messages: [user('x')], stream_options: { include_usage: true } }).param).toBe(
      'stream_options',
    );
    expect(refusal({ model: '', messages: [user('x')] }).param).toBe('model');
    expect(refusal({ model: 'coder', messages: [] }).param).toBe('messages');
    expect(refusal([]).status).toBe(400);
  });
});

describe('runMessageText', () => {
  const messages = parseChatRequest({
    model: 'coder',
    messages: [
      { role: 'system', content: 'Be terse.' },
      user('What is in the repo?'),
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'README.md' },
      { role: 'assistant', content: 'A README.' },
      user('Summarize it.'),
    ],
  }).messages;

  it('is the last user message alone when nothing came before it, or when going on with a conversation', () => {
    expect(runMessageText(parseChatRequest({ model: 'm', messages: [user('hello')] }).messages, true)).toBe('hello');
    expect(runMessageText(messages, false)).toBe('Summarize it.');
  });

  it('carries the earlier turns as a delimited transcript before the last user message', () => {
    expect(runMessageText(messages, true)).toBe(
      [
        TRANSCRIPT_OPENING,
        '',
        '<turn role="system">\nBe terse.\n</turn>',
        '<turn role="user">\nWhat is in the repo?\n</turn>',
        '<turn role="assistant">\n(called the tool ls with {}, call id call_1)\n</turn>',
        '<turn role="tool" tool_call_id="call_1">\nREADME.md\n</turn>',
        '<turn role="assistant">\nA README.\n</turn>',
        '',
        LATEST_MESSAGE_HEADING,
        '',
        'Summarize it.',
      ].join('\n'),
    );
  });

  it("refuses a request whose last message is not the user's, an empty one, and one past a message's length", () => {
    expect(() => runMessageText(messages.slice(0, -1), true)).toThrow(/the last message must be the user's/);
    expect(() => runMessageText([{ role: 'user', content: '  ' }], true)).toThrow(/has no text/);
    const long = 'x'.repeat(MAX_MESSAGE_CHARS);
    expect(runMessageText([{ role: 'user', content: long }], true)).toBe(long);
    expect(() =>
      runMessageText(
        [
          { role: 'system', content: 'Be terse.' },
          { role: 'user', content: long },
        ],
        true,
      ),
    ).toThrow(/past the 100000/);
  });
});

describe('agentChoiceOf and modelEntries', () => {
  const agents = {
    templates: [
      { name: 'coder', model: 'm', tools: [] },
      { name: 'fast', model: 'm', tools: [] },
    ],
    profiles: [
      { name: 'default', provider: 'openai-chat', model: 'm', fallbacks: [] },
      { name: 'fast', provider: 'openai-chat', model: 'm', fallbacks: [] },
    ],
  };

  it('prefers a template, takes a profile, and lets a prefix say which', () => {
    expect(agentChoiceOf('coder', agents)).toEqual({ template: 'coder' });
    expect(agentChoiceOf('default', agents)).toEqual({ profile: 'default' });
    expect(agentChoiceOf('fast', agents)).toEqual({ template: 'fast' });
    expect(agentChoiceOf('profile:fast', agents)).toEqual({ profile: 'fast' });
    expect(agentChoiceOf('template:fast', agents)).toEqual({ template: 'fast' });
  });

  it('answers an unknown model with 404 model_not_found listing the names', () => {
    for (const model of ['gpt-4o', 'template:default', 'profile:coder']) {
      let thrown: unknown;
      try {
        agentChoiceOf(model, agents);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
      expect((thrown as Error).message).toContain('coder, fast, default, profile:fast');
    }
  });

  it('lists each template, and each profile by a name that reaches it', () => {
    expect(modelEntries(agents).map((entry) => [entry.id, entry.owned_by])).toEqual([
      ['coder', 'flotilla-template'],
      ['fast', 'flotilla-template'],
      ['default', 'flotilla-profile'],
      ['profile:fast', 'flotilla-profile'],
    ]);
    for (const entry of modelEntries(agents)) expect(agentChoiceOf(entry.id, agents)).toBeDefined();
  });
});

describe('AnswerPieces', () => {
  const action = { type: 'action' } as Event;
  const message = { type: 'message', role: 'assistant' } as Event;

  it("keeps the pieces of the call that wrote the answer, not a step's before its tool calls", () => {
    const pieces = new AnswerPieces();
    for (const delta of ['Let me look.', ' ']) pieces.delta(delta);
    pieces.event(action);
    for (const delta of ['It ', 'is ', 'done.']) pieces.delta(delta);
    pieces.event(message);
    expect(pieces.piecesOf('It is done.')).toEqual(['It ', 'is ', 'done.']);
  });

  it('gives the answer whole when the pieces do not make it (a finish tool, a retried call, dropped deltas)', () => {
    const pieces = new AnswerPieces();
    expect(pieces.piecesOf('Finished.')).toEqual(['Finished.']);
    for (const delta of ['It is', 'It is done.']) pieces.delta(delta);
    pieces.event(message);
    expect(pieces.piecesOf('It is done.')).toEqual(['It is done.']);
  });
});
