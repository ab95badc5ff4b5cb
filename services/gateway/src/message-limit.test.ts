import { readFile } from 'node:fs/promises';
import { API_KEY_HEADER, ErrorBody, MAX_MESSAGE_CHARS } from '@flotilla/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACME_KEY, startGatewayHarness, type GatewayHarness } from './test-support/gateway-harness.js';

const API_DOC = new URL('../../../docs/api.md', import.meta.url);

describe('the message length limit (MAX_MESSAGE_CHARS)', () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness();
    await h.acme.createConversation({ id: 'limit' });
  });
  afterAll(async () => {
    await h?.[Symbol.asyncDispose]();
  });

  const post = (path: string, body: unknown): Promise<Response> =>
    fetch(`${h.url}/v1${path}`, {
      method: 'POST',
      headers: { [API_KEY_HEADER]: ACME_KEY, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('is 100,000 characters: a message of that length is taken, one character more is 400 validation_failed naming text', async () => {
    expect(MAX_MESSAGE_CHARS).toBe(100_000);
    expect((await post('/conversations/limit/messages', { text: 'a'.repeat(MAX_MESSAGE_CHARS) })).status).toBe(202);
    const refused = await post('/conversations/limit/messages', { text: 'a'.repeat(MAX_MESSAGE_CHARS + 1) });
    expect(refused.status).toBe(400);
    const error = ErrorBody.parse(await refused.json()).error;
    expect(error.code).toBe('validation_failed');
    expect(JSON.stringify(error)).toContain('text');
    // the first message of a new conversation, too
    expect((await post('/conversations', { id: 'limit-new', message: 'b'.repeat(MAX_MESSAGE_CHARS + 1) })).status).toBe(
      400,
    );
  });

  it('is stated in docs/api.md where message bodies are described', async () => {
    const doc = await readFile(API_DOC, 'utf8');
    const messagesRow = doc.split('\n').find((line) => line.startsWith('| `POST /v1/conversations/{id}/messages` |'));
    expect(messagesRow).toContain(`${MAX_MESSAGE_CHARS.toLocaleString('en-US')} characters`);
  });
});
