import type { FlotillaClient, SubscribeOptions } from '@flotilla/client';

/** The part of a live subscription the CLI uses. */
export type Subscription = { close(): void };

/** The client calls the CLI makes: a FlotillaClient, or a fake in tests. */
export type CliClient = Omit<FlotillaClient, 'options' | 'subscribe'> & {
  subscribe(id: string, options?: SubscribeOptions): Subscription;
};
