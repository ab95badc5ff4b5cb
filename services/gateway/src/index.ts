export { buildGateway } from './app.js';
export type { Gateway } from './app.js';
export type { GatewayDependencies } from './gateway-dependencies.js';
export { ApiKeyStore, hashApiKey, newApiKey } from './api-keys.js';
export { DEFAULT_GATEWAY_CONFIG, GatewayConfig, loadGatewayConfig } from './config.js';
export { ConversationIndex } from './conversation-index.js';
