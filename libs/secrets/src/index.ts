export type { SecretScope } from './secret-scope.js';
export { SECRET_NAME_PATTERN } from './secret-rules.js';
export { DEFAULT_SECRETS_BUCKET } from './bucket-setup.js';
export { SecretsError } from './errors.js';
export type { SecretsErrorCode } from './errors.js';
export { generateSecretsKey, loadSecretsKey } from './secrets-key.js';
export { SecretStore } from './secret-store.js';
export type { SecretStoreOptions } from './secret-store.js';
export { maskSecrets } from './mask-secrets.js';
