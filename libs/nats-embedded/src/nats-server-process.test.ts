import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { NatsServerProcess } from './nats-server-process.js';
import { findNatsServerBinary } from './nats-binary.js';

const AUTHORIZATION = 'authorization { user: flotilla, password: s3cret }';

describe.skipIf(!findNatsServerBinary())('NatsServerProcess', () => {
  it('keeps JetStream data across a SIGKILL and restart on the same port', async () => {
    await using server = await NatsServerProcess.start();
    expect(server.configFile).toBeUndefined();
    const nc = await connect({ servers: server.url, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'HARNESS', subjects: ['harness.>'] });
      const js = jetstream(nc);
      await js.publish('harness.a', 'one');
      await server.kill();
      expect(server.running).toBe(false);
      await server.restart();
      expect(server.running).toBe(true);
      await expect
        .poll(async () => (await jsm.streams.info('HARNESS').catch(() => undefined))?.state.messages, {
          timeout: 10_000,
        })
        .toBe(1);
    } finally {
      await nc.close();
    }
  });

  it('runs with its config text from an owner-only file beside its store, kept across restarts and removed on dispose', async () => {
    let configFile: string | undefined;
    {
      await using server = await NatsServerProcess.start({ config: AUTHORIZATION });
      configFile = server.configFile;
      expect(configFile).toBe(`${server.storeDir}.conf`);
      expect(dirname(configFile ?? '')).toBe(dirname(server.storeDir));
      expect((await stat(configFile ?? '')).mode & 0o777).toBe(0o600);
      expect(await readFile(configFile ?? '', 'utf8')).toBe(AUTHORIZATION);
      await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/authorization/i);
      await server.restart();
      await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/authorization/i);
      const nc = await connect({ servers: server.url, user: 'flotilla', pass: 's3cret', reconnect: false });
      await jetstreamManager(nc); // JetStream is still on (-js) next to the file
      await nc.close();
    }
    await expect(stat(configFile ?? '')).rejects.toThrow(/ENOENT/);
  });

  it('leaves the config file of a store it was given', async () => {
    const home = await mkdtemp(join(tmpdir(), 'flotilla-nats-home-'));
    try {
      const storeDir = join(home, 'nats');
      {
        await using server = await NatsServerProcess.start({ storeDir, config: AUTHORIZATION });
        expect(server.configFile).toBe(join(home, 'nats.conf'));
      }
      expect(await readFile(join(home, 'nats.conf'), 'utf8')).toBe(AUTHORIZATION);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });

  it('hands each log line to onLog, those printed after "Server is ready" too', async () => {
    const lines: string[] = [];
    await using server = await NatsServerProcess.start({ config: AUTHORIZATION, onLog: (line) => lines.push(line) });
    const ready = lines.findIndex((line) => line.includes('Server is ready'));
    expect(ready).toBeGreaterThan(0);
    expect(lines.every((line) => !line.includes('\n'))).toBe(true);
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/authorization/i);
    // nats-server logs the refused client as an error once it is running
    await expect
      .poll(() => lines.slice(ready + 1).some((line) => /\[ERR\].*authentication error/.test(line)), { timeout: 5_000 })
      .toBe(true);
  });
});
