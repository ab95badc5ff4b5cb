import { draftEvent, type MessageEvent } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { renderItem } from './render-items.js';

describe('renderItem', () => {
  it('shows the summarizer an image as a mark with its name, never its bytes or where they are', () => {
    const ref = { tenant: 'acme', conversation: 'c1', source: 'user' as const };
    const sha256 = 'b'.repeat(64);
    const message = {
      ...draftEvent(ref, 'message', {
        role: 'user',
        content: [
          { type: 'text', text: 'Why is this red?' },
          { type: 'image', sha256, bytes: 2_000, media_type: 'image/png', name: 'build.png' },
          { type: 'image', data: 'iVBORw0KGgo=', media_type: 'image/png' },
        ],
      }),
      seq: 2,
    } as MessageEvent;
    const text = renderItem(message);
    expect(text).toBe('USER: Why is this red?\n[image build.png]\n[image]');
    expect(text).not.toContain(sha256);
  });
});
