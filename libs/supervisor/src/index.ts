export { isModelSetting, ServiceProcess } from './service-process.js';
export type { ServiceProcessOptions, UnexpectedExit } from './service-process.js';
export { formatLogLine } from './log-format.js';
export { waitReady } from './wait-ready.js';
export { forgetPreloadedAllocator } from './allocator.js';
export { bundleService } from './service-bundle.js';
export { BACKGROUND_NICENESS, serviceNiceness } from './service-priority.js';
