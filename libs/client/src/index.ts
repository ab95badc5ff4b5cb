export { FlotillaClient } from './rest-client.js';
export type { ClientOptions, CreateResult } from './rest-client.js';
export { FlotillaApiError } from './errors.js';
export { EventSubscription } from './subscription.js';
export type { SubscribeOptions, WebSocketLike } from './subscription.js';
export { PendingActions } from './pending-actions.js';
