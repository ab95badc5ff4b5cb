export { CloseCode, ERROR_CODES, ErrorBody, ErrorCode } from './errors.js';
export * from './resources.js';
export * from './requests.js';
export * from './frames.js';
export { API_KEY_HEADER, API_PREFIX } from './paths.js';
