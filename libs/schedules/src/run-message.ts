import { ScheduleId } from '@flotilla/api';
import { TenantId, Timestamp } from '@flotilla/events';
import { z } from 'zod';

/**
 * The body of a schedule's definition, which nats-server copies into every run it produces, and
 * of the runs a gateway publishes itself: `scheduled` (the server's), `manual` (POST …/run) and
 * `caught_up` (a run the server skipped while it was down, for `missed_runs: run_once`).
 */
export const RunMessage = z.strictObject({
  v: z.literal(1),
  tenant: TenantId,
  schedule: ScheduleId,
  generation: z.number().int().nonnegative(),
  kind: z.enum(['scheduled', 'manual', 'caught_up']),
  /** When a gateway-made run was due (a scheduled run's is when the server stored it). */
  due_at: Timestamp.optional(),
});
export type RunMessage = z.infer<typeof RunMessage>;

export function encodeRunMessage(message: RunMessage): string {
  return JSON.stringify(message);
}

/** A run read back from the stream: the message, or undefined when it is not one. */
export function parseRunMessage(data: Uint8Array): RunMessage | undefined {
  try {
    const parsed = RunMessage.safeParse(JSON.parse(Buffer.from(data).toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
