export { ERROR_CODES, ErrorBody, ErrorCode } from './errors.js';
export { API_KEY_HEADER, API_PREFIX, CloseCode, FLOTILLA_VERSION } from './constants.js';
export * from './resources.js';
export * from './requests.js';
export * from './schedules.js';
export * from './frames.js';
export * from './workspace.js';
