import { API_PREFIX, SecretNames, SetSecretBody } from '@flotilla/api';
import { ConversationId, SecretName } from '@flotilla/events';
import { z } from 'zod';
import { route, type RouteSpec } from './route-table.js';
import type { SecretService } from './secret-service.js';

const IdParams = z.strictObject({ id: ConversationId });
const ConversationSecretParams = z.strictObject({ id: ConversationId, name: SecretName });
const TenantSecretParams = z.strictObject({ name: SecretName });

const p = (path: string): string => `${API_PREFIX}${path}`;

/**
 * Secrets: a conversation's own (each change a `secret_changed` event in its log) and the
 * tenant's defaults, which every conversation of the tenant gets unless it sets the same name.
 * Values go in, never out: no route, error or log line returns one.
 */
export function secretRoutes(secrets: SecretService): RouteSpec[] {
  const conversation = (tenant: string, id: string) => ({ tenant, conversation: id });
  return [
    route({
      method: 'GET',
      url: p('/conversations/:id/secrets'),
      operationId: 'listConversationSecrets',
      summary: "The names of the conversation's own secrets (never their values)",
      tag: 'secrets',
      access: 'tenant',
      params: IdParams,
      responses: { 200: SecretNames },
      errors: [404],
      handler: async ({ tenant, params }) => ({
        names: await secrets.namesForConversation(conversation(tenant, params.id)),
      }),
    }),
    route({
      method: 'PUT',
      url: p('/conversations/:id/secrets/:name'),
      operationId: 'setConversationSecret',
      summary:
        "Set one of the conversation's secrets (its sandbox gets it as the environment variable NAME); appends secret_changed",
      tag: 'secrets',
      access: 'tenant',
      params: ConversationSecretParams,
      body: SetSecretBody,
      responses: { 204: null },
      errors: [404],
      handler: async ({ tenant, params, body, reply }) => {
        await secrets.setForConversation(conversation(tenant, params.id), params.name, body.value);
        reply.code(204);
        return undefined;
      },
    }),
    route({
      method: 'DELETE',
      url: p('/conversations/:id/secrets/:name'),
      operationId: 'removeConversationSecret',
      summary:
        "Remove one of the conversation's secrets (404 secret_not_found when it has none of that name); appends secret_changed",
      tag: 'secrets',
      access: 'tenant',
      params: ConversationSecretParams,
      responses: { 204: null },
      errors: [404],
      handler: async ({ tenant, params, reply }) => {
        await secrets.removeForConversation(conversation(tenant, params.id), params.name);
        reply.code(204);
        return undefined;
      },
    }),
    route({
      method: 'GET',
      url: p('/secrets'),
      operationId: 'listTenantSecrets',
      summary: "The names of the tenant's default secrets (never their values)",
      tag: 'secrets',
      access: 'tenant',
      responses: { 200: SecretNames },
      handler: async ({ tenant }) => ({ names: await secrets.namesForTenant(tenant) }),
    }),
    route({
      method: 'PUT',
      url: p('/secrets/:name'),
      operationId: 'setTenantSecret',
      summary:
        "Set a default secret of the tenant: every conversation's sandbox gets it, unless the conversation sets the same name",
      tag: 'secrets',
      access: 'tenant',
      params: TenantSecretParams,
      body: SetSecretBody,
      responses: { 204: null },
      handler: async ({ tenant, params, body, reply }) => {
        await secrets.setForTenant(tenant, params.name, body.value);
        reply.code(204);
        return undefined;
      },
    }),
    route({
      method: 'DELETE',
      url: p('/secrets/:name'),
      operationId: 'removeTenantSecret',
      summary: 'Remove a default secret of the tenant (404 secret_not_found when there is none of that name)',
      tag: 'secrets',
      access: 'tenant',
      params: TenantSecretParams,
      responses: { 204: null },
      errors: [404],
      handler: async ({ tenant, params, reply }) => {
        await secrets.removeForTenant(tenant, params.name);
        reply.code(204);
        return undefined;
      },
    }),
  ];
}
