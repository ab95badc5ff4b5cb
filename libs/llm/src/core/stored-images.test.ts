import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../messages.js';
import { ScriptedLanguageModel } from '../scripted-language-model.js';
import { withStoredImages } from './stored-images.js';

const stored = {
  type: 'image' as const,
  mediaType: 'image/png',
  stored: { sha256: 'a'.repeat(64), bytes: 4, name: 'a.png' },
};
const user: ChatMessage = { role: 'user', content: [{ type: 'text', text: 'look' }, stored] };

describe('withStoredImages', () => {
  it('reads each message’s images in once: the next step sends the same resolved message object', async () => {
    const model = new ScriptedLanguageModel({ replies: [{ text: 'one' }, { text: 'two' }] });
    let reads = 0;
    const resolving = withStoredImages(model, async () => {
      reads += 1;
      return Uint8Array.from([1, 2, 3, 4]);
    });
    await resolving.generate({ messages: [user] });
    await resolving.generate({
      messages: [user, { role: 'assistant', content: [{ type: 'text', text: 'one' }], toolCalls: [] }, user],
    });
    expect(reads).toBe(1);
    const [first, second] = model.requests;
    expect(first!.messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { ...stored, data: 'AQIDBA==' },
      ],
    });
    expect(second!.messages[0]).toBe(first!.messages[0]);
  });

  it('throws when the store cannot be reached (the step is tried again), and reads again next time', async () => {
    const model = new ScriptedLanguageModel({ replies: [{ text: 'ok' }] });
    let fail = true;
    const resolving = withStoredImages(model, async () => {
      if (fail) throw new Error('no responders');
      return Uint8Array.from([9]);
    });
    const message: ChatMessage = { role: 'user', content: [stored] };
    await expect(resolving.generate({ messages: [message] })).rejects.toThrow('no responders');
    fail = false;
    await resolving.generate({ messages: [message] });
    expect(model.requests[0]!.messages[0]).toMatchObject({ content: [{ data: 'CQ==' }] });
  });

  it('leaves messages without stored images as they are', async () => {
    const model = new ScriptedLanguageModel({ replies: [{ text: 'ok' }] });
    const inline: ChatMessage = { role: 'user', content: [{ type: 'image', data: 'AAAA', mediaType: 'image/gif' }] };
    await withStoredImages(model, () => Promise.reject(new Error('not called'))).generate({ messages: [inline] });
    expect(model.requests[0]!.messages[0]).toBe(inline);
  });
});
