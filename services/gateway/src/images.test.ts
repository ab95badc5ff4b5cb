import { randomBytes } from 'node:crypto';
import { AgentCatalog } from '@flotilla/agent';
import { MAX_MESSAGE_BODY_BYTES } from '@flotilla/api';
import { FlotillaApiError } from '@flotilla/client';
import { MAX_IMAGE_BYTES, type Event, type ImageContent } from '@flotilla/events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACME_KEY, HARNESS_AGENT, startGatewayHarness, type GatewayHarness } from './test-support/gateway-harness.js';
import { openSocket } from './test-support/http-probe.js';

// Images in user messages through the gateway's REST and WebSocket API, on a real nats-server:
// checked by their bytes, stored in the images bucket (read back here as a step worker reads it),
// named in the message event, refused with the API's codes before anything is written.

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function png(size: number): Buffer {
  const bytes = randomBytes(size);
  bytes.set(PNG_SIGNATURE);
  return bytes;
}

const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');

async function refusal(promise: Promise<unknown>): Promise<{ status: number; code: string; paths: string[] }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof FlotillaApiError)
      return { status: error.status, code: error.code, paths: error.issues.map((issue) => issue.path) };
    throw error;
  }
  throw new Error('the request was accepted');
}

describe('images in user messages', () => {
  let h: GatewayHarness;
  const lastMessage = async (id: string): Promise<Event & { type: 'message' }> => {
    const { events } = await h.log.readEvents({ tenant: 'acme', conversation: id });
    return events.findLast((event): event is Event & { type: 'message' } => event.type === 'message')!;
  };

  beforeAll(async () => {
    const catalog = new AgentCatalog(HARNESS_AGENT, {
      profiles: { 'text-only': { provider: 'openai-chat', model: 'text-model', vision: false } },
    });
    h = await startGatewayHarness({}, { catalog });
  });
  afterAll(async () => {
    await h?.[Symbol.asyncDispose]();
  });

  it('stores a REST message’s image in the bucket and names it in a v4 message event, bytes out of the log', async () => {
    await h.acme.createConversation({ id: 'look' });
    const bytes = png(400 * 1024);
    const result = await h.acme.sendMessage('look', 'What is on this screen?', {
      images: [{ data: b64(bytes), media_type: 'image/png', name: 'screen.png' }],
    });
    expect(result.appended).toBe(true);
    const message = await lastMessage('look');
    expect(message.v).toBe(4);
    const image = message.content[1] as ImageContent;
    expect(message.content[0]).toEqual({ type: 'text', text: 'What is on this screen?' });
    expect(image).toMatchObject({
      type: 'image',
      bytes: bytes.length,
      media_type: 'image/png',
      name: 'screen.png',
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(image.data).toBeUndefined();
    expect(
      Buffer.from((await h.images.get('acme', { sha256: image.sha256!, bytes: image.bytes! }))!).equals(bytes),
    ).toBe(true);
    // another tenant's conversation could not name it into its own model's request
    expect(await h.images.get('globex', { sha256: image.sha256!, bytes: image.bytes! })).toBeUndefined();
  });

  it('takes images without text, the format told by the bytes when no media_type is given', async () => {
    await h.acme.createConversation({ id: 'only-images' });
    const gif = Buffer.concat([Buffer.from('GIF89a'), randomBytes(64)]);
    await h.acme.sendMessage('only-images', '', { images: [{ data: b64(gif) }, { data: b64(png(100)) }] });
    const message = await lastMessage('only-images');
    expect(message.content.map((part) => (part.type === 'image' ? part.media_type : part.type))).toEqual([
      'image/gif',
      'image/png',
    ]);
  });

  it('refuses what is not an image, a media type the bytes contradict, too many bytes and too many images, appending nothing', async () => {
    await h.acme.createConversation({ id: 'refused' });
    const before = (await h.acme.getConversation('refused')).last_seq;
    const send = (images: { data: string; media_type?: 'image/png' | 'image/jpeg' }[]) =>
      h.acme.sendMessage('refused', 'see', { images });
    expect(
      await refusal(
        send([{ data: b64(png(10)) }, { data: b64(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>')) }]),
      ),
    ).toEqual({ status: 415, code: 'unsupported_image', paths: ['body.images.1.data'] });
    expect(await refusal(send([{ data: b64(png(10)), media_type: 'image/jpeg' }]))).toEqual({
      status: 415,
      code: 'unsupported_image',
      paths: ['body.images.0.data'],
    });
    expect(await refusal(send([{ data: b64(png(MAX_IMAGE_BYTES + 1)) }]))).toEqual({
      status: 413,
      code: 'image_too_large',
      paths: ['body.images.0.data'],
    });
    const large = b64(png(MAX_IMAGE_BYTES));
    expect(
      await refusal(send([{ data: large }, { data: large }, { data: large }, { data: large }, { data: b64(png(10)) }])),
    ).toEqual({ status: 413, code: 'image_too_large', paths: ['body.images'] });
    expect(await refusal(send(Array.from({ length: 9 }, () => ({ data: b64(png(10)) }))))).toMatchObject({
      status: 400,
      code: 'validation_failed',
      paths: ['body.images'],
    });
    expect(await refusal(send([{ data: 'data:image/png;base64,iVBORw0KGgo=' }]))).toMatchObject({
      status: 400,
      code: 'validation_failed',
      paths: ['body.images.0.data'],
    });
    expect(await refusal(h.acme.sendMessage('refused', '', {}))).toMatchObject({
      status: 400,
      code: 'validation_failed',
      paths: ['body.text'],
    });
    expect((await h.acme.getConversation('refused')).last_seq).toBe(before);
  });

  it('takes a message with images up to the message routes’ own body limit, past the gateway’s usual one', async () => {
    expect(MAX_MESSAGE_BODY_BYTES).toBeGreaterThan(h.config.maxBodyBytes);
    await h.acme.createConversation({ id: 'large' });
    const large = b64(png(MAX_IMAGE_BYTES));
    const result = await h.acme.sendMessage('large', 'four large ones', {
      images: [{ data: large }, { data: large }, { data: large }, { data: b64(png(MAX_IMAGE_BYTES - 1)) }],
    });
    expect(result.appended).toBe(true);
    expect((await lastMessage('large')).content).toHaveLength(5);
    const info = await h.acme.serverInfo();
    expect(info.limits.images).toEqual({
      max_image_bytes: MAX_IMAGE_BYTES,
      max_images_per_message: 8,
      max_message_image_bytes: 4 * MAX_IMAGE_BYTES,
      max_message_body_bytes: MAX_MESSAGE_BODY_BYTES,
      media_types: ['image/png', 'image/jpeg', 'image/gif', 'image/webp'],
    });
  });

  it('refuses images for a conversation whose model takes none (400 images_not_supported), storing nothing; its text still goes', async () => {
    await h.acme.createConversation({ id: 'text-only', spec: { llm: { profile: 'text-only' } } });
    const bytes = png(50);
    expect(await refusal(h.acme.sendMessage('text-only', 'see', { images: [{ data: b64(bytes) }] }))).toEqual({
      status: 400,
      code: 'images_not_supported',
      paths: ['body.images'],
    });
    await h.acme.sendMessage('text-only', 'just text');
    expect((await lastMessage('text-only')).content).toEqual([{ type: 'text', text: 'just text' }]);
  });

  it('takes an image in a WebSocket message frame, acked like any message', async () => {
    await h.acme.createConversation({ id: 'socket-image' });
    const socket = openSocket(h, '/v1/conversations/socket-image/events', { auth: { frame: ACME_KEY } });
    await socket.opened;
    const bytes = png(2_000);
    socket.socket.send(
      JSON.stringify({
        type: 'message',
        id: 'img',
        text: 'from the socket',
        images: [{ data: b64(bytes), name: 'tiny.png' }],
      }),
    );
    socket.socket.send(
      JSON.stringify({ type: 'message', id: 'bad', images: [{ data: b64(Buffer.from('not an image at all')) }] }),
    );
    const deadline = Date.now() + 5_000;
    while (
      socket.frames.filter((frame) => frame.type === 'ack' || frame.type === 'error').length < 2 &&
      Date.now() < deadline
    )
      await new Promise((resolve) => setTimeout(resolve, 10));
    socket.socket.close();
    expect(socket.frames.find((frame) => frame.type === 'ack')).toMatchObject({ id: 'img', appended: true });
    expect(socket.frames.find((frame) => frame.type === 'error')).toMatchObject({
      id: 'bad',
      code: 'unsupported_image',
    });
    const message = await lastMessage('socket-image');
    expect(message.content[1]).toMatchObject({
      type: 'image',
      name: 'tiny.png',
      bytes: 2_000,
      media_type: 'image/png',
    });
  });
});
