import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JetStreamPublisher } from './jetstream-publisher.js';

let server: NatsTestServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  await nc.close();
  await server[Symbol.asyncDispose]();
});

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('JetStreamPublisher', () => {
  it('answers each publish with its stream sequence, a retried message id as a duplicate, and a refusal with its error code', async () => {
    const name = uniqueName('PUB');
    const subject = `pub.${name.toLowerCase()}`;
    await (await jetstreamManager(nc)).streams.add({ name, subjects: [`${subject}.>`] });
    const publisher = new JetStreamPublisher(nc, 2_000);
    const withId = (id: string, expectedLast?: number) => {
      const h = headers();
      h.set('Nats-Msg-Id', id);
      if (expectedLast !== undefined) h.set('Nats-Expected-Last-Subject-Sequence', String(expectedLast));
      return h;
    };

    // many at once: each answer is matched to its own publish
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        publisher.publish(`${subject}.s${index}`, bytes(String(index)), withId(`m${index}`)),
      ),
    );
    expect(answers.map((answer) => (answer.ok ? answer.seq : 0)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, index) => index + 1),
    );
    expect(await publisher.publish(`${subject}.s7`, bytes('again'), withId('m7'))).toEqual({
      ok: true,
      seq: answers[7]!.ok ? answers[7]!.seq : -1,
      duplicate: true,
    });

    const stale = await publisher.publish(`${subject}.s3`, bytes('stale'), withId('stale', 1));
    expect(stale).toMatchObject({ ok: false, kind: 'refused', status: 400, errCode: 10071 });
    expect(stale.ok ? '' : stale.description).toMatch(/wrong last sequence: 4$/);
  });

  it('says when no stream takes the subject, when no answer comes in time, and when the connection is closed', async () => {
    const publisher = new JetStreamPublisher(nc, 300);
    expect(await publisher.publish(`nostream.${uniqueName('X')}`, bytes('x'), headers())).toMatchObject({
      ok: false,
      kind: 'no_stream',
    });

    const silent = `silent.${uniqueName('X').toLowerCase()}`;
    const listener = nc.subscribe(silent); // a responder that never answers
    const started = performance.now();
    expect(await publisher.publish(silent, bytes('x'), headers())).toMatchObject({ ok: false, kind: 'timeout' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(performance.now() - started).toBeLessThan(1_500);
    listener.unsubscribe();

    const own = await connect({ servers: server.url });
    const closing = new JetStreamPublisher(own, 10_000);
    own.subscribe(silent); // answers nothing
    const pending = closing.publish(silent, bytes('x'), headers());
    await own.flush();
    await own.close();
    expect(await pending).toMatchObject({ ok: false, kind: 'closed' });
    expect(await closing.publish(silent, bytes('x'), headers())).toMatchObject({ ok: false, kind: 'closed' });
  });
});
