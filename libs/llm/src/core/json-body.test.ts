import { describe, expect, it } from 'vitest';
import { EncodedJson, jsonBody } from './json-body.js';

const utf8 = new TextEncoder();
const encode = (value: unknown): Uint8Array => utf8.encode(JSON.stringify(value));

describe('jsonBody', () => {
  const items = [
    { role: 'user', content: 'héllo — “quoted” \u{1F600}' },
    { role: 'assistant', content: null, n: [1, 2] },
    'a "string"',
    42,
  ];

  it.each([
    ['head and tail', { model: 'm' }, { stream: true, options: { x: [1] } }],
    ['no head', {}, { stream: false }],
    ['no tail', { model: 'm', max: 3 }, {}],
    ['neither', {}, {}],
    ['undefined values only', { model: undefined }, { stream: undefined }],
    ['undefined values among others', { model: 'm', skip: undefined }, { skip: undefined, stream: true }],
  ])('is the JSON of the whole object (%s)', (_name, head, tail) => {
    const body = jsonBody(head, 'messages', items.map(encode), tail);
    expect(body.toString('utf8')).toBe(JSON.stringify({ ...head, messages: items, ...tail }));
    expect(JSON.parse(body.toString('utf8'))).toEqual(
      JSON.parse(JSON.stringify({ ...head, messages: items, ...tail })),
    );
  });

  it('writes an empty array for no items, and skips empty items', () => {
    expect(jsonBody({ model: 'm' }, 'messages', []).toString()).toBe('{"model":"m","messages":[]}');
    expect(jsonBody({ model: 'm' }, 'messages', [new Uint8Array(0)]).toString()).toBe('{"model":"m","messages":[]}');
    const empty = new Uint8Array(0);
    expect(jsonBody({}, 'input', [empty, encode(1), empty, utf8.encode('2,3'), empty]).toString()).toBe(
      '{"input":[1,2,3]}',
    );
  });

  it('copies an item given in parts one part after the other', () => {
    const turn = [
      utf8.encode('{"role":"user","content":['),
      encode({ a: 1 }),
      utf8.encode(','),
      encode('é'),
      utf8.encode(']}'),
    ];
    expect(JSON.parse(jsonBody({ model: 'm' }, 'messages', [turn, encode(2), [new Uint8Array(0)]]).toString())).toEqual(
      {
        model: 'm',
        messages: [{ role: 'user', content: [{ a: 1 }, 'é'] }, 2],
      },
    );
  });
});

describe('EncodedJson', () => {
  it('encodes each key once, as the JSON of its wire form', () => {
    let conversions = 0;
    const encoded = new EncodedJson<{ text: string }>((message) => {
      conversions += 1;
      return JSON.stringify({ content: message.text });
    });
    const message = { text: 'ünïcode' };
    const first = encoded.of(message);
    expect(new TextDecoder().decode(first)).toBe('{"content":"ünïcode"}');
    expect(encoded.of(message)).toBe(first);
    expect(encoded.of({ text: 'ünïcode' })).not.toBe(first);
    expect(conversions).toBe(2);
  });
});
