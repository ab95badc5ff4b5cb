import { startTracing, type Tracing } from '@flotilla/tracing';
import type { Logger } from 'pino';
import type { ServiceConfig } from './service-config.js';

/**
 * Traces on when the config names an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT): the SDK is
 * loaded and spans are exported in batches. Otherwise nothing is loaded and undefined comes back.
 */
export async function startServiceTracing(
  config: Pick<ServiceConfig, 'service' | 'instanceId' | 'otlpEndpoint'>,
  logger: Logger,
): Promise<Tracing | undefined> {
  if (config.otlpEndpoint === undefined) return undefined;
  const tracing = await startTracing({
    service: config.service,
    instance: config.instanceId,
    endpoint: config.otlpEndpoint,
  });
  logger.info({ otlpEndpoint: config.otlpEndpoint }, 'tracing on: spans exported over OTLP/HTTP');
  return tracing;
}
