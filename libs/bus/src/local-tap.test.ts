import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadBusSettings } from './bus-settings.js';
import { readLocalTap, removeLocalTap, withLocalTap, writeLocalTap } from './local-tap.js';

let home: string;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'flotilla-local-tap-'));
});

afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

describe("the local system's tap (tap.json)", () => {
  it("is written owner-only with the URL and the tap user's password file, and read from $FLOTILLA_HOME", async () => {
    const passwordFile = join(home, 'tap.password');
    await writeFile(passwordFile, 'tap-secret\n', { mode: 0o600 });
    await writeFile(join(home, 'tap.json'), '{}', { mode: 0o644 });
    await writeLocalTap(home, { natsUrl: 'nats://127.0.0.1:14222', user: 'tap', passwordFile });
    expect((await stat(join(home, 'tap.json'))).mode & 0o777).toBe(0o600);
    expect(await readFile(join(home, 'tap.json'), 'utf8')).not.toContain('tap-secret');
    const tap = readLocalTap({ FLOTILLA_HOME: home });
    expect(tap).toEqual({ natsUrl: 'nats://127.0.0.1:14222', user: 'tap', passwordFile, file: join(home, 'tap.json') });

    // nothing in the environment: the file's server and credential
    const settings = loadBusSettings(withLocalTap({}, tap));
    expect(settings.servers).toEqual(['nats://127.0.0.1:14222']);
    expect(settings.auth).toMatchObject({ kind: 'user', user: 'tap' });
    expect(settings.auth.kind === 'user' && settings.auth.password.read()).toBe('tap-secret');
  });

  it('gives way to the environment: its credential wins, and the tap password never goes to another server', () => {
    const tap = {
      natsUrl: 'nats://127.0.0.1:14222',
      user: 'tap',
      passwordFile: '/nowhere/tap.password',
      file: 'tap.json',
    };
    expect(withLocalTap({ FLOTILLA_NATS_URL: 'nats://elsewhere:4222' }, tap)).toEqual({
      FLOTILLA_NATS_URL: 'nats://elsewhere:4222',
    });
    expect(withLocalTap({ FLOTILLA_NATS_USER: 'tap-acme', FLOTILLA_NATS_PASSWORD: 'p' }, tap)).toEqual({
      FLOTILLA_NATS_URL: 'nats://127.0.0.1:14222',
      FLOTILLA_NATS_USER: 'tap-acme',
      FLOTILLA_NATS_PASSWORD: 'p',
    });
    expect(withLocalTap({ FLOTILLA_NATS_URL: 'nats://127.0.0.1:14222' }, tap)).toMatchObject({
      FLOTILLA_NATS_USER: 'tap',
      FLOTILLA_NATS_PASSWORD_FILE: '/nowhere/tap.password',
    });
    expect(withLocalTap({ FLOTILLA_NATS_URL: 'nats://x:1' }, undefined)).toEqual({ FLOTILLA_NATS_URL: 'nats://x:1' });
  });

  it('is absent without a file, and a broken one is named', async () => {
    const other = await mkdtemp(join(tmpdir(), 'flotilla-local-tap-'));
    try {
      expect(readLocalTap({ FLOTILLA_HOME: other })).toBeUndefined();
      await writeFile(join(other, 'tap.json'), '{"nats_url":');
      expect(() => readLocalTap({ FLOTILLA_HOME: other })).toThrow(/tap\.json is not valid JSON/);
      await writeFile(join(other, 'tap.json'), '{"nats_url": "nats://x:1"}');
      expect(() => readLocalTap({ FLOTILLA_HOME: other })).toThrow(/tap\.json must hold \{"nats_url"/);
      await removeLocalTap(other);
      expect(readLocalTap({ FLOTILLA_HOME: other })).toBeUndefined();
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});
