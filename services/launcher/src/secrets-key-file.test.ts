import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSecretsKey } from '@flotilla/secrets';
import { afterAll, describe, expect, it } from 'vitest';
import { EMBEDDED_SERVICES } from './launcher.js';
import { isSecretsKeySetting, secretsEnvironmentFor, secretsKeySettings } from './secrets-key-file.js';

const root = mkdtempSync(join(tmpdir(), 'flotilla-launcher-secrets-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const home = (): string => mkdtempSync(join(root, 'home-'));

describe('the secrets key of the embedded system', () => {
  it('is created in <home>/secrets.key (mode 0600) on the first start and kept on the next', async () => {
    const directory = home();
    const first = await secretsKeySettings(directory, {});
    const file = join(directory, 'secrets.key');
    expect(first).toEqual({ env: { FLOTILLA_SECRETS_KEY_FILE: file }, file, created: true });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const key = readFileSync(file, 'utf8');
    expect(key.trim()).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    const second = await secretsKeySettings(directory, {});
    expect(second).toEqual({ env: { FLOTILLA_SECRETS_KEY_FILE: file }, file, created: false });
    expect(readFileSync(file, 'utf8')).toBe(key);
  });

  it('is never replaced when malformed: the launch stops, naming the file', async () => {
    const directory = home();
    const file = join(directory, 'secrets.key');
    writeFileSync(file, 'not a key\n', { mode: 0o600 });
    await expect(secretsKeySettings(directory, {})).rejects.toThrow(
      /FLOTILLA_SECRETS_KEY_FILE \(.*secrets\.key\) must hold a key/,
    );
    expect(readFileSync(file, 'utf8')).toBe('not a key\n');
  });

  it('warns about a key file others can read', async () => {
    const directory = home();
    writeFileSync(join(directory, 'secrets.key'), `${generateSecretsKey()}\n`, { mode: 0o644 });
    expect((await secretsKeySettings(directory, {})).warning).toMatch(/can be read by others \(mode 644\): chmod 600/);
  });

  it("is the launcher's own FLOTILLA_SECRETS_KEY(_FILE) when it has one, checked first", async () => {
    const directory = home();
    const key = generateSecretsKey();
    expect(await secretsKeySettings(directory, { FLOTILLA_SECRETS_KEY: key })).toEqual({
      env: { FLOTILLA_SECRETS_KEY: key },
      created: false,
    });
    expect(() => statSync(join(directory, 'secrets.key'))).toThrow();
    await expect(secretsKeySettings(directory, { FLOTILLA_SECRETS_KEY: 'short' })).rejects.toThrow(
      /FLOTILLA_SECRETS_KEY must hold/,
    );
    await expect(
      secretsKeySettings(directory, { FLOTILLA_SECRETS_KEY_FILE: join(directory, 'missing') }),
    ).rejects.toThrow(/cannot be read/);
  });

  it('goes to the gateway, the tool runner, the model callers and the webhooks service only, and no service inherits it', async () => {
    const settings = await secretsKeySettings(home(), {});
    const given = Object.fromEntries(
      EMBEDDED_SERVICES.map((service) => [service, secretsEnvironmentFor(service, settings)]),
    );
    expect(given).toEqual({
      projector: {},
      condenser: { FLOTILLA_SECRETS_KEY_FILE: settings.file },
      'step-worker': { FLOTILLA_SECRETS_KEY_FILE: settings.file },
      gateway: { FLOTILLA_SECRETS_KEY_FILE: settings.file },
      'tool-runner': { FLOTILLA_SECRETS_KEY_FILE: settings.file },
      webhooks: { FLOTILLA_SECRETS_KEY_FILE: settings.file },
      delegator: {},
    });
    expect(['FLOTILLA_SECRETS_KEY', 'FLOTILLA_SECRETS_KEY_FILE'].every(isSecretsKeySetting)).toBe(true);
    expect(isSecretsKeySetting('FLOTILLA_SECRETS_REPLICAS')).toBe(false);
  });
});
