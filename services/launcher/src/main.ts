import { loadLauncherConfig } from './config.js';
import { lockHome } from './home-lock.js';

const output = {
  info: (line: string) => console.log(`[flotilla] ${line}`),
  warn: (line: string) => console.warn(`[flotilla] warning: ${line}`),
  log: (line: string) => console.log(line),
};

try {
  const config = loadLauncherConfig();
  // a second launcher on this home is refused before the services' code is even loaded
  const homeLock = await lockHome(config.home);
  const { launch } = await import('./launcher.js');
  const system = await launch(config, output, { homeLock });
  output.info(`ready: NATS ${system.natsUrl}`);
  for (const service of system.services) output.info(`  ${service.name.padEnd(12)} ${service.health}/ready  /metrics`);
  output.info(
    `gateway ${system.gatewayUrl}  (web UI: ${system.gatewayUrl}/#key=${system.apiKey}, API docs: ${system.gatewayUrl}/docs)`,
  );
  output.info(
    `API key of tenant "${system.tenant}": ${system.apiKey}  (kept in ${config.home}/api-key; the CLI reads ${config.home}/cli.json, its tap and the audit ${config.home}/tap.json)`,
  );
  output.info('Try: npm run flotilla -- create --message "hello" --run --watch');
  output.info('Press Ctrl-C to stop.');
  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    output.info(`${signal}: stopping`);
    await system[Symbol.asyncDispose]();
    output.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  void system.failed.then(async (message) => {
    console.error(`[flotilla] ${message}: stopping`);
    await system[Symbol.asyncDispose]();
    process.exit(1);
  });
} catch (error) {
  console.error(`[flotilla] could not start: ${(error as Error).message}`);
  process.exit(1);
}
