import { pino, type Logger } from 'pino';
import type { ServiceConfig } from './service-config.js';

export type { Logger };

/** JSON logs on stdout; every line carries the service and instance. Bind `conversation` per message. */
export function createLogger(config: Pick<ServiceConfig, 'service' | 'instanceId' | 'logLevel'>): Logger {
  return pino({ level: config.logLevel, base: { service: config.service, instance: config.instanceId } });
}
