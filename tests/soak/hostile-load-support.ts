// What the hostile-load-*.test.ts files send through the gateway and how they wait for a
// conversation to come to rest.
import type { ConversationRef } from '@flotilla/log';
import type { RunningTestSystem } from '../support/system.js';

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One flood message: when it was sent and answered, and the answer (accepted at `lastSeq`, or refused and why). */
export type Sent = {
  readonly index: number;
  readonly sentAt: number;
  answeredAt: number;
  accepted: boolean;
  lastSeq?: number;
  refusal?: string;
  retryAfter?: number;
};
export type Answer = Omit<Sent, 'index' | 'sentAt' | 'answeredAt'>;

/** POST /v1/conversations/{id}/messages with `key`: accepted (202, its last_seq) or refused (status, code, Retry-After). */
export async function postMessage(
  system: RunningTestSystem,
  key: string,
  id: string,
  text: string,
  run: boolean,
): Promise<Answer & { status: number }> {
  const response = await fetch(`${system.gatewayUrl}/v1/conversations/${id}/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text, run }),
  });
  const body = (await response.json()) as { last_seq?: number; error?: { code: string } };
  const retryAfter = response.headers.get('retry-after');
  return response.status === 202
    ? { status: response.status, accepted: true, ...(body.last_seq !== undefined ? { lastSeq: body.last_seq } : {}) }
    : {
        status: response.status,
        accepted: false,
        refusal: `${response.status} ${body.error?.code}`,
        ...(retryAfter !== null ? { retryAfter: Number(retryAfter) } : {}),
      };
}

/** Polls until the conversation is at rest (finished, error, stuck) and its log stays still for `quietMs`. */
export async function waitForRest(
  system: RunningTestSystem,
  ref: ConversationRef,
  timeoutMs: number,
  quietMs = 1_500,
): Promise<number> {
  const started = performance.now();
  await system.waitForStatus([ref], ['finished', 'error', 'stuck'], timeoutMs);
  let last = (await system.log.tail(ref)).lastSeq;
  for (let still = performance.now(); performance.now() - still < quietMs;) {
    if (performance.now() - started > timeoutMs)
      throw new Error(`${ref.conversation} did not stay at rest within ${timeoutMs} ms (tail at seq ${last})`);
    await sleep(200);
    const now = (await system.log.tail(ref)).lastSeq;
    if (now !== last) {
      last = now;
      still = performance.now();
      await system.waitForStatus(
        [ref],
        ['finished', 'error', 'stuck'],
        Math.max(1, timeoutMs - (performance.now() - started)),
      );
    }
  }
  return performance.now() - started;
}

export function exits(system: RunningTestSystem): string[] {
  return system.processes.flatMap((child) =>
    child.unexpectedExits.map(
      (exit) =>
        `${child.name} exited (code ${exit.code}, signal ${exit.signal}) after ${exit.ranMs} ms:\n${exit.lastLines.join('\n')}`,
    ),
  );
}
