// Test support for other packages' tests and benchmarks (`@flotilla/gateway/testing`), never the service's entry.
export { ACME_KEY, ADMIN_KEY, GLOBEX_KEY, startGatewayHarness } from './gateway-harness.js';
export type { GatewayHarness, HarnessOptions } from './gateway-harness.js';
export { awaitingConfirmation, writeLongConversation } from './long-conversation.js';
export type { LongConversation, LongConversationOptions } from './long-conversation.js';
