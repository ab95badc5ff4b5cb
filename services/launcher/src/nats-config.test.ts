import { readFile, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectionOptions, loadBusSettings, SERVICES } from '@flotilla/bus';
import { EventLog } from '@flotilla/log';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { writeNatsConfig } from './nats-config.js';

const COMPOSE = fileURLToPath(new URL('../../../docker-compose.yml', import.meta.url));

type ComposeService = { secrets?: string[]; environment?: Record<string, string>; command?: string[] };
type Compose = { services: Record<string, ComposeService>; secrets: Record<string, { file: string }> };

let dir: string;
let server: NatsServerProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flotilla-nats-config-'));
  const written = await writeNatsConfig(join(dir, 'compose'));
  server = await NatsServerProcess.start({
    storeDir: join(dir, 'store'),
    config: await readFile(written.config, 'utf8'),
  });
});
afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
  await rm(dir, { recursive: true, force: true });
});

describe('the configuration docker-compose.yml runs nats-server with', () => {
  it('is owner-only and keeps its passwords when written again', async () => {
    const first = await readFile(join(dir, 'compose', 'users', 'gateway.password'), 'utf8');
    await writeNatsConfig(join(dir, 'compose'));
    expect(await readFile(join(dir, 'compose', 'users', 'gateway.password'), 'utf8')).toBe(first);
    expect((await stat(join(dir, 'compose', 'nats.conf'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'compose', 'users', 'gateway.password'))).mode & 0o777).toBe(0o600);
  });

  it('refuses anonymous clients; each service connects as itself, within its permissions', async () => {
    await expect(connect({ servers: server.url, maxReconnectAttempts: 0 })).rejects.toThrow(/authorization/i);
    const as = async (user: string) =>
      connect({
        ...connectionOptions(
          loadBusSettings({
            FLOTILLA_NATS_URL: server.url,
            FLOTILLA_NATS_USER: user,
            FLOTILLA_NATS_PASSWORD_FILE: join(dir, 'compose', 'users', `${user}.password`),
          }),
          { name: user, identity: user },
        ),
        maxReconnectAttempts: 0,
      });
    const gateway = await as('gateway');
    const log = await EventLog.open(gateway);
    expect(log.streamName).toBe('FLOTILLA_EVENTS');
    const worker = await as('step-worker');
    await expect((await jetstreamManager(worker)).streams.purge('FLOTILLA_EVENTS')).rejects.toThrow(/permission/i);
    await Promise.all([gateway.close(), worker.close()]);
  });

  it('is what docker-compose.yml gives each service: its own user and only its own password', async () => {
    const compose = parse(await readFile(COMPOSE, 'utf8')) as Compose;
    expect(compose.services['nats']!.command).toEqual(expect.arrayContaining(['-c', '/run/secrets/nats_conf']));
    expect(compose.secrets['nats_conf']!.file).toBe('./.flotilla-compose/nats.conf');
    for (const service of SERVICES) {
      const definition = compose.services[service]!;
      const secret = `nats_${service.replace('-', '_')}`;
      expect(definition.secrets, service).toEqual([secret]);
      expect(definition.environment?.['FLOTILLA_NATS_USER'], service).toBe(service);
      expect(definition.environment?.['FLOTILLA_NATS_PASSWORD_FILE'], service).toBe(`/run/secrets/${secret}`);
      expect(compose.secrets[secret]!.file).toBe(`./.flotilla-compose/users/${service}.password`);
    }
  });
});
