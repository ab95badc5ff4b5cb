import {
  API_PREFIX,
  CreatedWebhook,
  CreateWebhookBody,
  DeadLetterList,
  DeadLetterQuery,
  Webhook,
  WebhookId,
  WebhookList,
} from '@flotilla/api';
import { z } from 'zod';
import { route, type RouteSpec } from './route-table.js';
import type { WebhookService } from './webhook-service.js';

const WebhookParams = z.strictObject({ id: WebhookId });

const p = (path: string): string => `${API_PREFIX}${path}`;

/**
 * Webhooks of the caller's tenant: signed POSTs of its conversations' status changes,
 * confirmations pending and finishes, delivered at least once by the webhooks service
 * (docs/api.md, "Webhooks"). The signing secret is returned by the creation only.
 */
export function webhookRoutes(webhooks: WebhookService): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: p('/webhooks'),
      operationId: 'createWebhook',
      summary:
        'Register a webhook: an http(s) URL and the event kinds it gets; the answer holds its signing secret, shown this once',
      tag: 'webhooks',
      access: 'tenant',
      body: CreateWebhookBody,
      responses: { 201: CreatedWebhook },
      errors: [409],
      handler: async ({ tenant, body, reply }) => {
        reply.code(201);
        return webhooks.create(tenant, body);
      },
    }),
    route({
      method: 'GET',
      url: p('/webhooks'),
      operationId: 'listWebhooks',
      summary: "The tenant's webhooks, oldest first (never their secrets)",
      tag: 'webhooks',
      access: 'tenant',
      responses: { 200: WebhookList },
      handler: async ({ tenant }) => ({ webhooks: await webhooks.list(tenant) }),
    }),
    route({
      method: 'GET',
      url: p('/webhooks/:id'),
      operationId: 'getWebhook',
      summary: 'One webhook (never its secret)',
      tag: 'webhooks',
      access: 'tenant',
      params: WebhookParams,
      responses: { 200: Webhook },
      errors: [404],
      handler: async ({ tenant, params }) => webhooks.get(tenant, params.id),
    }),
    route({
      method: 'DELETE',
      url: p('/webhooks/:id'),
      operationId: 'removeWebhook',
      summary: 'Remove a webhook and its dead letters; deliveries still queued for it are dropped',
      tag: 'webhooks',
      access: 'tenant',
      params: WebhookParams,
      responses: { 204: null },
      errors: [404],
      handler: async ({ tenant, params, reply }) => {
        await webhooks.remove(tenant, params.id);
        reply.code(204);
        return undefined;
      },
    }),
    route({
      method: 'GET',
      url: p('/webhooks/:id/dead-letters'),
      operationId: 'listWebhookDeadLetters',
      summary:
        'Deliveries of the webhook that failed every attempt (or whose address may not be reached), the latest first',
      tag: 'webhooks',
      access: 'tenant',
      params: WebhookParams,
      query: DeadLetterQuery,
      responses: { 200: DeadLetterList },
      errors: [404],
      handler: async ({ tenant, params, query }) => ({
        dead_letters: await webhooks.deadLetters(tenant, params.id, query.limit),
      }),
    }),
  ];
}
