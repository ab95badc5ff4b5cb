import { readFile, writeFile } from 'node:fs/promises';
import type { Event } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import type { BrainTask } from '../support/brain-server.js';
import { describe, expect, it } from 'vitest';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

type Call = NonNullable<BrainTask['calls']>[number];

function observationTexts(events: readonly Event[]): string[] {
  return events
    .filter((event) => event.type === 'observation')
    .map((event) => event.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n'));
}

/** The tool runner's process: its peak resident memory is what a hostile tool output must not blow up. */
function toolRunnerPid(system: RunningTestSystem): number {
  const pid = system.processes.find((child) => child.name === 'tool-runner-1')?.pid;
  if (pid === undefined) throw new Error('no tool runner process');
  return pid;
}

/** Peak resident memory (VmHWM) of a process in MiB. */
async function peakRssMib(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmHWM for ${pid}`);
  return Number(kib) / 1024;
}

/** Start measuring a new peak (Linux: writing 5 to clear_refs resets VmHWM to the current RSS). */
async function resetPeakRss(pid: number): Promise<void> {
  await writeFile(`/proc/${pid}/clear_refs`, '5');
}

/** The calm neighbour: three commands of 0.2 s each. */
const CALM_TASK = { steps: 3, sleep: 0.2 } as const;

async function runAlone(system: RunningTestSystem, ref: ConversationRef): Promise<number> {
  const started = Date.now();
  await system.start(ref, { id: ref.conversation, ...CALM_TASK });
  await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 30_000);
  expect(await system.status(ref)).toBe('finished');
  return Date.now() - started;
}

const at = (event: Event): number => Date.parse(event.timestamp);

/**
 * Runs `calls` in one conversation beside a calm one on the same services (after the calm one's
 * pace alone was taken), and checks what every hostile test owes: both come to rest within
 * `boundMs`, the calm one finishes in about its time alone while the hostile calls run, no service
 * process exits, and the auditor passes on both. Returns the hostile conversation's observations
 * and how much the tool runner's peak memory grew while it ran.
 */
async function hostileBesideCalm(
  system: RunningTestSystem,
  name: string,
  calls: readonly Call[],
  boundMs: number,
): Promise<{ observations: string[]; peakMib: number }> {
  const aloneMs = await runAlone(system, { tenant: 'acme', conversation: `${name}-calm-alone` });
  const pid = toolRunnerPid(system);
  await resetPeakRss(pid);
  const baseMib = await peakRssMib(pid);
  const hostile = { tenant: 'acme', conversation: name };
  const calm = { tenant: 'acme', conversation: `${name}-calm` };
  const started = Date.now();
  await system.start(hostile, { id: name, steps: calls.length, calls });
  await system.start(calm, { id: calm.conversation, ...CALM_TASK });
  await system.waitForStatus([calm], ['finished', 'error', 'stuck'], boundMs);
  const besideMs = Date.now() - started;
  await system.waitForStatus([hostile], ['finished', 'error', 'stuck'], Math.max(1, boundMs - (Date.now() - started)));
  const hostileMs = Date.now() - started;
  const peakMib = await peakRssMib(pid);
  const hostileEvents = await system.events(hostile);
  const calmEvents = await system.events(calm);
  // the calm neighbour's commands ran while the hostile ones did
  const busyFrom = at(hostileEvents.find((event) => event.type === 'action')!);
  const busyUntil = at(hostileEvents.filter((event) => event.type === 'observation').at(-2) ?? hostileEvents.at(-1)!);
  const calmInside = calmEvents.filter(
    (event) => event.type === 'observation' && at(event) >= busyFrom && at(event) <= busyUntil,
  ).length;
  console.log(
    `${name}: came to rest in ${hostileMs} ms; tool runner peak RSS ${peakMib.toFixed(0)} MiB (${baseMib.toFixed(0)} MiB before); calm neighbour ${besideMs} ms beside it (${calmInside} of its 3 commands done while the hostile ones ran), ${aloneMs} ms alone`,
  );
  expect(await system.status(hostile)).toBe('finished');
  expect(await system.status(calm)).toBe('finished');
  expect(calmInside, 'calm commands finished while the hostile calls ran').toBeGreaterThanOrEqual(1);
  expect(besideMs, `the calm neighbour took ${besideMs} ms beside it, ${aloneMs} ms alone`).toBeLessThan(
    aloneMs * 2 + 1_000,
  );
  for (const child of system.processes) expect(child.unexpectedExits, child.name).toEqual([]);
  for (const ref of [hostile, calm]) {
    await expectAudited(system.log, ref);
  }
  return { observations: observationTexts(hostileEvents), peakMib: peakMib - baseMib };
}

describe('hostile tool inputs, through the services', () => {
  it('a command that prints 100 MB: a bounded observation naming the saved part, bounded tool-runner memory, the run goes on', async () => {
    await using system = await startTestSystem();
    const calls: Call[] = [
      { tool: 'terminal', input: { command: 'yes | head -c 100000000; echo; echo printed-all', timeout: 60 } },
      {
        tool: 'terminal',
        input: { command: 'head -c 100000000 /dev/zero | tr "\\0" a; echo; echo one-line-done', timeout: 60 },
      },
      // the agent reads what was saved (its head and tail, 10 MB each) in pieces
      {
        tool: 'terminal',
        input: {
          command:
            "for f in /run/flotilla/observations/terminal_output_*.txt; do echo \"saved $(wc -c < $f) bytes, $(grep -c 'bytes of output were dropped here' $f) gap, starts $(head -c 3 $f | tr '\\n' .)\"; done",
        },
      },
      // binary, and progress lines redrawn with carriage returns: the other ways output is cleaned
      { tool: 'terminal', input: { command: 'head -c 100000000 /dev/urandom; echo; echo binary-done', timeout: 60 } },
      {
        tool: 'terminal',
        input: {
          command: "yes $'progress 50%\\rprogress 100%' | head -c 100000000; echo; echo progress-done",
          timeout: 60,
        },
      },
      { tool: 'terminal', input: { command: 'echo still-here' } },
    ];
    const { observations, peakMib } = await hostileBesideCalm(system, 'hundred-mb', calls, 60_000);
    expect(observations).toHaveLength(6);
    for (const [index, observation] of observations.slice(0, 2).entries()) {
      expect(observation.length, `observation ${index}`).toBeLessThanOrEqual(30_000);
      // the tail (the last lines) reaches the model; the clipping is explained with the real total
      expect(observation).toContain(index === 0 ? 'printed-all' : 'one-line-done');
      expect(observation).toMatch(
        /<response clipped: the output was about 100,000,000 characters; the middle was omitted here\. Only its first and last parts were kept/,
      );
      const saved = /saved to (\S+?); the omitted part starts at line \d+ \(byte \d+\)/.exec(observation)?.[1];
      expect(saved, observation.slice(0, 2_000)).toBeDefined();
      expect(observation).toContain('[The command completed with exit code 0.]');
    }
    // one line of 100 MB: the notice points at a read by characters, not by lines
    expect(observations[1]).toMatch(/tail -c \+\d+ \S+ \| head -c \d+/);
    expect(
      observations[2]!
        .split('\n')
        .filter((line) => line.startsWith('saved '))
        // in the order of what each saved file starts with (their sizes differ by a byte or two, either way)
        .sort((a, b) => a.slice(a.indexOf(' starts ')).localeCompare(b.slice(b.indexOf(' starts ')))),
    ).toEqual([
      expect.stringMatching(/^saved 100000\d\d bytes, 1 gap, starts aaa$/),
      expect.stringMatching(/^saved 100000\d\d bytes, 1 gap, starts y\.y$/),
    ]);
    expect(observations[3]).toMatch(/^\[The command printed [\d,]+ characters of binary/);
    expect(observations[4]).toContain('progress-done');
    expect(observations[4]).not.toContain('progress 50%');
    expect(observations[4]).toMatch(/<response clipped: the output was (about )?[\d,]+ characters/);
    expect(observations[5]).toContain('still-here');
    expect(peakMib, 'tool runner peak RSS growth (MiB)').toBeLessThan(250);
  }, 90_000);

  it('a 1 GB file viewed, of many lines and of one line: bounded views, no whole read, the run goes on', async () => {
    await using system = await startTestSystem();
    const calls: Call[] = [
      {
        tool: 'terminal',
        input: {
          command: `yes 'a line of text, 0123456789' | head -c 1G > big.txt; head -c 1G /dev/zero | tr '\\0' z > one-line.txt; ls -l big.txt one-line.txt`,
          timeout: 60,
        },
      },
      { tool: 'file_editor', input: { command: 'view', path: '/workspace/big.txt' } },
      {
        tool: 'file_editor',
        input: { command: 'view', path: '/workspace/big.txt', view_range: [1_000_000, 1_000_004] },
      },
      { tool: 'file_editor', input: { command: 'view', path: '/workspace/one-line.txt' } },
      // no line 2: found out by reading all of the gigabyte, in chunks
      { tool: 'file_editor', input: { command: 'view', path: '/workspace/one-line.txt', view_range: [2, 3] } },
      {
        tool: 'file_editor',
        input: { command: 'str_replace', path: '/workspace/big.txt', old_str: 'a line', new_str: 'b line' },
      },
      { tool: 'terminal', input: { command: 'rm -f big.txt one-line.txt; echo removed' } },
    ];
    const { observations, peakMib } = await hostileBesideCalm(system, 'gigabyte-view', calls, 75_000);
    expect(observations).toHaveLength(7);
    const [made, view, range, oneLine, noSecondLine, replace, removed] = observations as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    expect(made).toContain('1073741824 ');
    for (const text of [view, range, oneLine]) expect(text.length).toBeLessThanOrEqual(17_000);
    expect(view).toContain('     1\ta line of text, 0123456789');
    expect(view).toMatch(
      /The file is 1,073,741,824 bytes, too large to show whole: lines 1-\d+ are shown\. Use view_range/,
    );
    expect(range).toContain('1000000\ta line of text, 0123456789');
    expect(range).toContain('1000004\ta line of text, 0123456789');
    expect(range).not.toContain('1000005\t');
    expect(oneLine).toMatch(/^\s+1\tzzzz/m);
    expect(oneLine).toMatch(/Line 1 is longer than [\d,]+ characters; only its first [\d,]+ are shown/);
    expect(noSecondLine).toContain(
      'Invalid view_range [2, 3]: the first line must be between 1 and 1 (the file has 1 lines).',
    );
    expect(replace).toMatch(/The file \/workspace\/big\.txt is 1,073,741,824 bytes, too large for the editor/);
    expect(removed).toContain('removed');
    expect(peakMib, 'tool runner peak RSS growth (MiB)').toBeLessThan(100);
  }, 90_000);
});
