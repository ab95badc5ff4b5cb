import { API_PREFIX, CreateScheduleBody, Schedule, ScheduleId, ScheduleList } from '@flotilla/api';
import { z } from 'zod';
import { route, type RouteSpec } from './route-table.js';
import type { ScheduleService } from './schedule-service.js';

const ScheduleParams = z.strictObject({ id: ScheduleId });
const p = (path: string): string => `${API_PREFIX}${path}`;

/**
 * Schedules of the caller's tenant: a conversation created, or a message sent to one, at a time,
 * every interval or on a cron expression in a time zone, run by nats-server's scheduler and taken
 * by a gateway (docs/api.md, "Schedules").
 */
export function scheduleRoutes(schedules: ScheduleService): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: p('/schedules'),
      operationId: 'createSchedule',
      summary:
        'Schedule a run: a conversation created from a template with a message, or a message sent to a conversation; at a time, every interval or on a cron expression in a time zone',
      tag: 'schedules',
      access: 'tenant',
      body: CreateScheduleBody,
      responses: { 201: Schedule },
      errors: [404, 409],
      handler: async ({ tenant, body, reply }) => {
        reply.code(201);
        return schedules.create(tenant, body);
      },
    }),
    route({
      method: 'GET',
      url: p('/schedules'),
      operationId: 'listSchedules',
      summary: "The tenant's schedules, oldest first, each with its status, next run and last run",
      tag: 'schedules',
      access: 'tenant',
      responses: { 200: ScheduleList },
      handler: async ({ tenant }) => ({ schedules: await schedules.list(tenant) }),
    }),
    route({
      method: 'GET',
      url: p('/schedules/:id'),
      operationId: 'getSchedule',
      summary: 'One schedule: what it does, when, its status, next run and last run (with its error)',
      tag: 'schedules',
      access: 'tenant',
      params: ScheduleParams,
      responses: { 200: Schedule },
      errors: [404],
      handler: async ({ tenant, params }) => schedules.get(tenant, params.id),
    }),
    route({
      method: 'POST',
      url: p('/schedules/:id/pause'),
      operationId: 'pauseSchedule',
      summary: 'Pause a schedule: no run until it is resumed (a run still waiting for a gateway is dropped)',
      tag: 'schedules',
      access: 'tenant',
      params: ScheduleParams,
      responses: { 200: Schedule },
      errors: [404],
      handler: async ({ tenant, params }) => schedules.pause(tenant, params.id),
    }),
    route({
      method: 'POST',
      url: p('/schedules/:id/resume'),
      operationId: 'resumeSchedule',
      summary:
        'Resume a paused schedule: it runs again from now on (a one-time schedule whose time passed runs at once, or is skipped with missed_runs: skip)',
      tag: 'schedules',
      access: 'tenant',
      params: ScheduleParams,
      responses: { 200: Schedule },
      errors: [404],
      handler: async ({ tenant, params }) => schedules.resume(tenant, params.id),
    }),
    route({
      method: 'POST',
      url: p('/schedules/:id/run'),
      operationId: 'runSchedule',
      summary: "Run a schedule now, once, whatever its status (its outcome shows in the schedule's last_run)",
      tag: 'schedules',
      access: 'tenant',
      params: ScheduleParams,
      responses: { 202: Schedule },
      errors: [404],
      handler: async ({ tenant, params, reply }) => {
        reply.code(202);
        return schedules.runNow(tenant, params.id);
      },
    }),
    route({
      method: 'DELETE',
      url: p('/schedules/:id'),
      operationId: 'deleteSchedule',
      summary: 'Delete a schedule: it never runs again (a run still waiting is dropped); what it created stays',
      tag: 'schedules',
      access: 'tenant',
      params: ScheduleParams,
      responses: { 204: null },
      errors: [404],
      handler: async ({ tenant, params, reply }) => {
        await schedules.remove(tenant, params.id);
        reply.code(204);
        return undefined;
      },
    }),
  ];
}
