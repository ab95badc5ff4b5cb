export { launch } from './launcher.js';
export type { LauncherOutput, RunningSystem } from './launcher.js';
export { LauncherConfig, loadLauncherConfig } from './config.js';
export { HomeInUseError, lockHome } from './home-lock.js';
export type { HomeLock, HomeLockRecord } from './home-lock.js';
