import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { authorizationConfig, ensureUsers, SERVICES, type Identity } from '@flotilla/bus';

/** The identities of a deployment's server: each service, the admin, a read-only tap, and a tap per tenant asked for. */
export function deploymentIdentities(tenantTaps: readonly string[]): Identity[] {
  return [...SERVICES, 'admin', 'tap', ...tenantTaps.map((tenant) => ({ tenantTap: tenant }))];
}

/**
 * Writes a nats-server configuration for a deployment that runs the services apart (Docker
 * Compose, your own servers): `<dir>/nats.conf` (JetStream, and the authorization block of the
 * permission matrix) and `<dir>/users/<user>.password` (owner-only; kept when they exist, so
 * running it again keeps every password). Returns the files written.
 */
export async function writeNatsConfig(
  dir: string,
  tenantTaps: readonly string[] = [],
): Promise<{ config: string; users: string[] }> {
  const root = resolve(dir);
  await mkdir(root, { recursive: true, mode: 0o700 });
  const users = await ensureUsers(join(root, 'users'), deploymentIdentities(tenantTaps));
  const config = join(root, 'nats.conf');
  await writeFile(
    config,
    `# written by \`npm run nats-config\`: one user per Flotilla service (docs/operations.md, "Permissions")\njetstream {}\n${authorizationConfig(users)}`,
    { mode: 0o600 },
  );
  return { config, users: users.map((user) => user.passwordFile) };
}
