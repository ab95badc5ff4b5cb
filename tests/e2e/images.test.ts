import { randomBytes } from 'node:crypto';
import type { Event } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { expectAudited } from '../support/audited.js';
import { taskMessage } from '../support/brain-server.js';
import { startTestSystem } from '../support/system.js';

const DONE = ['finished', 'error', 'stuck'] as const;

/** A PNG signature and random bytes: the gateway tells the format by the signature. */
function png(size: number): Buffer {
  const bytes = randomBytes(size);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return bytes;
}

describe('an image in a user message (through the services)', () => {
  it('goes from a REST message through the log (by reference) and the images bucket to every model request of the run, in its bytes', async () => {
    await using system = await startTestSystem({ gateway: true, recordModelRequests: true });
    const ref = { tenant: 'acme', conversation: 'with-image' };
    expect((await system.api('POST', '/conversations', { id: ref.conversation })).status).toBe(201);
    const bytes = png(600 * 1024);
    const base64 = bytes.toString('base64');
    const sent = await system.api('POST', `/conversations/${ref.conversation}/messages`, {
      text: taskMessage({ id: 'with-image', steps: 1, effects: system.effects }),
      images: [{ data: base64, media_type: 'image/png', name: 'screen.png' }],
      run: true,
    });
    expect(sent.status, sent.text).toBe(202);
    await system.waitForStatus([ref], DONE, 60_000);
    expect(await system.status(ref)).toBe('finished');

    // the log names the image; its bytes are not in it
    const events = await system.events(ref);
    const message = events.find(
      (event): event is Extract<Event, { type: 'message' }> => event.type === 'message' && event.source === 'user',
    )!;
    expect(message.v).toBe(4);
    expect(message.content[1]).toMatchObject({
      type: 'image',
      bytes: bytes.length,
      media_type: 'image/png',
      name: 'screen.png',
    });
    expect(JSON.stringify(events)).not.toContain(base64.slice(0, 100));

    // every step's request carries it as an image_url part with its bytes (a step after the tool's result too)
    const steps = system.brain.requests.filter(
      (body) => body.includes('TASK') && !body.includes('You name conversations'),
    );
    expect(steps.length).toBeGreaterThanOrEqual(2);
    for (const body of steps) {
      const user = (JSON.parse(body) as { messages: { role: string; content: unknown }[] }).messages.find(
        (entry) => entry.role === 'user',
      )!;
      expect(user.content).toEqual([
        { type: 'text', text: expect.stringContaining('TASK') },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${base64}` } },
      ]);
    }
    await expectAudited(system.log, ref);
  });
});
