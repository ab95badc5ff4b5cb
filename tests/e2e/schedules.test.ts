import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Schedule } from '@flotilla/api';
import { waitReady } from '@flotilla/supervisor';
import { describe, expect, it } from 'vitest';
import { taskMessage } from '../support/brain-server.js';
import { runToExit, type Exited } from '../support/run-to-exit.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

const FLOTILLA = fileURLToPath(new URL('../../services/cli/bin/flotilla', import.meta.url));

/** The CLI as a user runs it, against the test's gateway as tenant acme. */
const flotilla = (system: RunningTestSystem, args: readonly string[]): Promise<Exited> =>
  runToExit(FLOTILLA, args, {
    env: { ...process.env, FLOTILLA_URL: system.gatewayUrl, FLOTILLA_API_KEY: system.apiKey },
    cwd: tmpdir(),
    timeoutMs: 60_000,
  });

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls the schedule until `check` holds, saying what it waited for when it gives up. */
async function untilSchedule(
  system: RunningTestSystem,
  id: string,
  what: string,
  check: (schedule: Schedule) => boolean,
  timeoutMs = 30_000,
): Promise<Schedule> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await system.api('GET', `/schedules/${id}`).catch(() => undefined);
    const schedule = reply?.status === 200 ? (reply.body as Schedule) : undefined;
    if (schedule && check(schedule)) return schedule;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}: last ${JSON.stringify(schedule ?? reply?.text)}`);
    await sleep(250);
  }
}

async function create(system: RunningTestSystem, body: unknown): Promise<Schedule> {
  const reply = await system.api('POST', '/schedules', body);
  expect(reply.status, reply.text).toBe(201);
  return reply.body as Schedule;
}

/** A gateway's `flotilla_schedule_runs_total` by outcome. */
function runsTaken(metrics: string): { succeeded: number } {
  const count = (outcome: string): number =>
    Number(
      new RegExp(`^flotilla_schedule_runs_total\\{outcome="${outcome}"[^}]*\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0,
    );
  return { succeeded: count('succeeded') };
}

/** A cron firing at these seconds of every minute (UTC seconds are every zone's). */
const atSeconds = (seconds: readonly number[]): string =>
  `${[...new Set(seconds.map((second) => ((second % 60) + 60) % 60))].sort((a, b) => a - b).join(',')} * * * * *`;

describe('schedules through the services', () => {
  it('a cron in a time zone creates conversations that run; pause, resume, delete; another tenant is refused; schedules survive a restart of every service and of nats-server, a run missed meanwhile runs once or is skipped by policy', async () => {
    await using system = await startTestSystem({
      // two gateways share the runs' consumer: each run is taken by one of them
      gateways: 2,
      // runs every few seconds and a short grace, for the test's sake (defaults: a minute each)
      gatewayEnv: { FLOTILLA_SCHEDULE_MIN_INTERVAL_SECONDS: '1', FLOTILLA_SCHEDULE_MISSED_RUN_GRACE_MS: '1500' },
    });
    const task = (id: string): string => taskMessage({ id, steps: 0, effects: system.effects });

    // ── a cron with seconds, in a time zone, firing within the test ────────────────────────────
    const every3 = await create(system, {
      when: { cron: '*/3 * * * * *', time_zone: 'America/New_York' },
      action: { type: 'create_conversation', message: task('scheduled'), title: 'scheduled' },
    });
    const first = await untilSchedule(system, every3.id, 'the first run', (schedule) => schedule.runs >= 1);
    expect(first.last_run).toMatchObject({ outcome: 'succeeded', error: null });
    const conversation = { tenant: 'acme', conversation: first.last_run!.conversation! };
    await system.waitForStatus([conversation], ['finished'], 30_000);
    // the conversation ran with the schedule's message
    const events = await system.events(conversation);
    expect(
      events.some(
        (event) =>
          event.type === 'message' && event.source === 'user' && JSON.stringify(event.content).includes('scheduled'),
      ),
    ).toBe(true);
    expect(system.brain.calls.some((call) => call.task === 'scheduled')).toBe(true);

    // another tenant's key: as if it did not exist
    expect((await system.api('GET', `/schedules/${every3.id}`, undefined, system.otherApiKey)).status).toBe(404);
    expect((await system.api('POST', `/schedules/${every3.id}/pause`, undefined, system.otherApiKey)).status).toBe(404);
    expect((await system.api('DELETE', `/schedules/${every3.id}`, undefined, system.otherApiKey)).status).toBe(404);
    expect((await system.api('GET', '/schedules', undefined, system.otherApiKey)).body).toEqual({ schedules: [] });

    // pause stops the runs (through the CLI)
    const paused = await flotilla(system, ['schedule', 'pause', every3.id]);
    expect(paused, paused.stderr).toMatchObject({ code: 0, stdout: `paused schedule ${every3.id}\n` });
    // a run a gateway had already begun taking finishes; none begins after
    await sleep(1_000);
    const pausedRuns = (await untilSchedule(system, every3.id, 'the pause', (schedule) => schedule.status === 'paused'))
      .runs;
    await sleep(3_500);
    expect((await untilSchedule(system, every3.id, 'the paused schedule', () => true)).runs).toBe(pausedRuns);
    // every run was taken once: the gateways' counts of runs taken add up to the schedule's
    const taken = await Promise.all(
      system.gatewayUrls.map(async (url) => runsTaken(await (await fetch(`${url}/metrics`)).text())),
    );
    expect(taken.reduce((sum, count) => sum + count.succeeded, 0)).toBe(pausedRuns);

    // ── every service and nats-server restart; runs come due while no gateway runs ────────────────
    // a run_once schedule with three runs due while the gateway is down, and a skip one with one
    const due = Math.ceil(Date.now() / 1000) + 8;
    const runOnce = await create(system, {
      when: { cron: atSeconds([due, due + 1, due + 2]), time_zone: 'Europe/Paris' },
      action: { type: 'create_conversation', message: task('missed-once') },
      missed_runs: 'run_once',
    });
    const skip = await create(system, {
      when: { cron: atSeconds([due]) },
      action: { type: 'create_conversation', message: task('missed-skip') },
      missed_runs: 'skip',
    });
    await Promise.all(system.processes.map((child) => child.stop()));
    await system.nats.restart();
    // the runs must come due with no gateway up, or this test tests nothing
    expect(Date.now(), 'the services took too long to stop: the runs came due while a gateway was up').toBeLessThan(
      due * 1000,
    );
    // nats-server is up again and fires the runs; no service takes them
    await sleep(Math.max(0, due * 1000 + 4_500 - Date.now()));
    for (const child of system.processes) child.start();
    await Promise.all([...system.healthUrls.values()].map((url) => waitReady(url, 60_000)));

    // run_once: the three runs collapsed into one, taken once
    const caughtUp = await untilSchedule(system, runOnce.id, 'the missed run', (schedule) => schedule.runs >= 1);
    expect(caughtUp.last_run).toMatchObject({ outcome: 'succeeded' });
    await system.waitForStatus(
      [{ tenant: 'acme', conversation: caughtUp.last_run!.conversation! }],
      ['finished'],
      30_000,
    );
    // skip: recorded as skipped, nothing created
    const skipped = await untilSchedule(system, skip.id, 'the skipped run', (schedule) => schedule.runs >= 1);
    expect(skipped.last_run).toMatchObject({
      outcome: 'skipped',
      conversation: null,
      error: { code: 'missed_run_skipped' },
    });
    expect(system.brain.calls.some((call) => call.task === 'missed-skip')).toBe(false);
    await sleep(1_500);
    expect((await untilSchedule(system, runOnce.id, 'the run_once schedule', () => true)).runs).toBe(1);
    expect(system.brain.calls.filter((call) => call.task === 'missed-once').length).toBeGreaterThan(0);

    // the paused schedule is still paused; resumed, it runs again
    const afterRestart = await untilSchedule(system, every3.id, 'the paused schedule after the restart', () => true);
    expect(afterRestart).toMatchObject({ status: 'paused', runs: pausedRuns });
    expect(((await system.api('POST', `/schedules/${every3.id}/resume`)).body as Schedule).status).toBe('active');
    const resumed = await untilSchedule(
      system,
      every3.id,
      'a run after the resume',
      (schedule) => schedule.runs > pausedRuns,
    );
    expect(resumed.last_run).toMatchObject({ outcome: 'succeeded' });

    // deleted: gone, and no more runs
    for (const schedule of [every3, runOnce, skip])
      expect((await system.api('DELETE', `/schedules/${schedule.id}`)).status).toBe(204);
    expect((await system.api('GET', `/schedules/${every3.id}`)).status).toBe(404);
    expect((await system.api('GET', '/schedules')).body).toEqual({ schedules: [] });
    const listed = await flotilla(system, ['schedule', 'list', '--json']);
    expect(JSON.parse(listed.stdout)).toEqual([]);
  }, 150_000);
});
