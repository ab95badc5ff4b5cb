import { MINIMUM_SERVER_VERSION } from '@flotilla/nats-embedded';
import { findOldNatsServer, NatsServerProcess } from '@flotilla/testing';
import { describe, expect, it } from 'vitest';
import { loadBusSettings } from './bus-settings.js';
import { connectBus } from './connect-bus.js';
import { UnsupportedServerError } from './errors.js';

// Every Flotilla process connects through connectBus: a server it cannot run on is refused there.

const old = findOldNatsServer();

describe('connectBus', () => {
  it('connects to a current nats-server with JetStream', async () => {
    await using server = await NatsServerProcess.start();
    const nc = await connectBus(loadBusSettings({ FLOTILLA_NATS_URL: server.url }), {
      name: 'test',
      identity: 'admin',
    });
    try {
      expect(nc.info?.jetstream).toBe(true);
    } finally {
      await nc.close();
    }
  });

  it('refuses a current nats-server without JetStream, saying how to enable it', async () => {
    await using server = await NatsServerProcess.start({ jetstream: false });
    const refused = await connectBus(loadBusSettings({ FLOTILLA_NATS_URL: server.url }), {
      name: 'test',
      identity: 'admin',
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UnsupportedServerError);
    expect((refused as UnsupportedServerError).code).toBe('jetstream_unavailable');
    expect((refused as Error).message).toContain('start it with -js');
  });

  it.skipIf(old.binary === undefined)(
    `refuses a nats-server older than ${MINIMUM_SERVER_VERSION}, naming the version it needs and why (${old.binary === undefined ? old.reason : old.version})`,
    async () => {
      await using server = await NatsServerProcess.start({ binary: old.binary! });
      const refused = await connectBus(loadBusSettings({ FLOTILLA_NATS_URL: server.url }), {
        name: 'test',
        identity: 'admin',
      }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(UnsupportedServerError);
      expect((refused as UnsupportedServerError).code).toBe('server_too_old');
      expect((refused as Error).message).toContain(
        `nats-server ${old.binary === undefined ? '' : old.version} at 127.0.0.1:${server.port} is too old: Flotilla needs nats-server ${MINIMUM_SERVER_VERSION} or newer`,
      );
      expect((refused as Error).message).toContain('direct-get batch');
    },
  );
});
