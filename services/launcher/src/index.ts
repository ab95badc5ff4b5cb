export { launch } from './launcher.js';
export type { LauncherOutput, RunningSystem } from './launcher.js';
export { LauncherConfig, loadLauncherConfig } from './config.js';
