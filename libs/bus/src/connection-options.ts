import { readFileSync } from 'node:fs';
import {
  credsAuthenticator,
  nkeyAuthenticator,
  usernamePasswordAuthenticator,
  type Authenticator,
  type ConnectionOptions,
} from '@nats-io/transport-node';
import type { BusAuth, BusSettings } from './bus-settings.js';

/**
 * The inbox prefix of a NATS identity (a service, a tap, the launcher): replies to its requests
 * arrive under it, so its credential may subscribe to its own replies and no one else's.
 */
export function inboxPrefix(identity: string): string {
  return `_INBOX.${identity}`;
}

/**
 * Where answers to an identity's requests to other services come back (requestAnswer): the one
 * branch of its inbox that the services answering it may publish to.
 */
export function answersPrefix(identity: string): string {
  return answersUnder(inboxPrefix(identity));
}

/** The answers branch under an inbox prefix. */
export function answersUnder(prefix: string): string {
  return `${prefix}.answers`;
}

export type BusConnectionOptions = {
  /** Shown in the server's connection list. */
  readonly name: string;
  /** Whose inboxes this connection uses (see inboxPrefix). */
  readonly identity: string;
};

/** Options for `connect()` from validated settings; secrets are read from their files at each (re)connect. */
export function connectionOptions(settings: BusSettings, options: BusConnectionOptions): ConnectionOptions {
  const authenticator = authenticatorFor(settings.auth);
  return {
    servers: [...settings.servers],
    name: options.name,
    inboxPrefix: inboxPrefix(options.identity),
    ...(authenticator ? { authenticator } : {}),
    ...(settings.tls ? { tls: { ...settings.tls } } : {}),
  };
}

function authenticatorFor(auth: BusAuth): Authenticator | undefined {
  switch (auth.kind) {
    case 'none':
      return undefined;
    case 'user':
      return usernamePasswordAuthenticator(auth.user, () => auth.password.read());
    case 'nkey':
      return nkeyAuthenticator(() => new TextEncoder().encode(readFileSync(auth.seedFile, 'utf8').trim()));
    case 'creds':
      return credsAuthenticator(() => readFileSync(auth.credsFile));
  }
}

/**
 * The inbox prefix a connection was opened with, for code that makes its own reply subjects (a
 * shared reply subscription): nats.js keeps it on the connection without exposing it in the type.
 */
export function connectionInboxPrefix(nc: object): string | undefined {
  return (nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
}
