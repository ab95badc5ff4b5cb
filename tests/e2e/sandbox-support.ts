// Commands run in a conversation's terminal through the services, and what they printed, for the
// sandbox-*.test.ts files.
import type { Event } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { expect } from 'vitest';
import type { RunningTestSystem } from '../support/system.js';

/**
 * Runs `commands` in a conversation's terminal, through the services, and returns each command's
 * observation text. Each call carries a hard timeout, so a slow command (a `find /` on a loaded
 * machine) is waited for rather than returned early for printing nothing new for a while.
 */
export async function runCommands(
  system: RunningTestSystem,
  ref: ConversationRef,
  commands: readonly string[],
  timeoutMs = 90_000,
): Promise<string[]> {
  const calls = commands.map((command) => ({ tool: 'terminal', input: { command, timeout: timeoutMs / 1_000 } }));
  await system.start(ref, { id: ref.conversation, steps: commands.length, calls });
  await system.waitForStatus([ref], ['finished', 'error', 'stuck'], timeoutMs);
  expect(await system.status(ref)).toBe('finished');
  return observationTexts(await system.events(ref));
}

export function observationTexts(events: readonly Event[]): string[] {
  return events
    .filter((event) => event.type === 'observation')
    .map((event) => event.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n'));
}
