/** Every REST route lives under this prefix; the WebSocket shares the events path. */
export const API_PREFIX = '/v1';
/** Alternative to `Authorization: Bearer <key>`. */
export const API_KEY_HEADER = 'x-api-key';
