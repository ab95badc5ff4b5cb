import type { CreateScheduleBody, Schedule } from '@flotilla/api';
import { FlotillaApiError } from '@flotilla/client';
import { describe, expect, it } from 'vitest';
import { parseCliArgs } from './args.js';
import type { CliClient } from './cli-client.js';
import { CliError } from './errors.js';
import { runCli } from './run-cli.js';
import { Captured } from './test-support/fake-stream.js';

const ID = `sch_${'ab'.repeat(16)}`;
const command = (...argv: string[]) => parseCliArgs(argv).command;
function usageMessage(...argv: string[]): string {
  try {
    parseCliArgs(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    return (error as CliError).message;
  }
  throw new Error(`parsed: ${argv.join(' ')}`);
}

const schedule: Schedule = {
  id: ID,
  when: { cron: '0 30 9 * * MON-FRI', time_zone: 'Europe/Paris' },
  action: { type: 'create_conversation', message: 'standup notes' },
  missed_runs: 'skip',
  description: null,
  status: 'active',
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  next_run_at: '2026-01-02T08:30:00.000Z',
  runs: 3,
  last_run: {
    due_at: '2026-01-01T08:30:00.000Z',
    handled_at: '2026-01-01T00:04:00.000Z',
    outcome: 'failed',
    conversation: null,
    error: { code: 'capacity_exhausted', message: 'Too many running.' },
  },
};

/** A client that records the schedule calls it gets, answering as a gateway would. */
function recordingClient(calls: unknown[][]): Partial<CliClient> {
  const found = async (name: string, id: string): Promise<Schedule> => {
    calls.push([name, id]);
    if (id !== ID) throw new FlotillaApiError(404, 'schedule_not_found', `No schedule "${id}".`);
    return schedule;
  };
  return {
    createSchedule: async (body: CreateScheduleBody) => {
      calls.push(['createSchedule', body]);
      return { ...schedule, when: body.when, action: body.action };
    },
    listSchedules: async () => {
      calls.push(['listSchedules']);
      return [schedule];
    },
    getSchedule: (id: string) => found('getSchedule', id),
    pauseSchedule: (id: string) => found('pauseSchedule', id),
    resumeSchedule: (id: string) => found('resumeSchedule', id),
    runSchedule: (id: string) => found('runSchedule', id),
    deleteSchedule: async (id: string) => void (await found('deleteSchedule', id)),
  };
}

async function run(argv: string[], client: Partial<CliClient>) {
  const stdout = new Captured();
  const stderr = new Captured();
  const code = await runCli(argv, {
    stdout,
    stderr,
    env: { FLOTILLA_URL: 'http://gw:1', FLOTILLA_API_KEY: 'k' },
    readConfig: () => undefined,
    createClient: () => client as CliClient,
    now: () => new Date('2026-01-01T00:05:00.000Z'),
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('flotilla schedule', () => {
  it('parses add with each kind of when and action', () => {
    expect(
      command(
        'schedule',
        'add',
        '--cron',
        '0 30 9 * * MON-FRI',
        '--time-zone',
        'Europe/Paris',
        '--message',
        'standup notes',
        '--template',
        'reviewer',
        '--missed',
        'skip',
      ),
    ).toEqual({
      name: 'schedule-add',
      body: {
        when: { cron: '0 30 9 * * MON-FRI', time_zone: 'Europe/Paris' },
        action: { type: 'create_conversation', message: 'standup notes', template: 'reviewer' },
        missed_runs: 'skip',
      },
      json: false,
    });
    expect(command('schedule', 'add', '--every', '30m', '--message', 'any news?', '--to', 'c1', '--json')).toEqual({
      name: 'schedule-add',
      body: {
        when: { every: '30m' },
        action: { type: 'send_message', conversation: 'c1', text: 'any news?' },
        missed_runs: 'run_once',
      },
      json: true,
    });
    expect(command('schedule', 'add', '--at', '2026-12-24T18:00:00+01:00', '--message', 'merry')).toMatchObject({
      body: { when: { at: '2026-12-24T18:00:00+01:00' } },
    });
    expect(command('schedule', 'pause', ID)).toEqual({ name: 'schedule-pause', id: ID });
    expect(command('schedule', 'get', ID, '--json')).toEqual({ name: 'schedule-get', id: ID, json: true });
  });

  it('names what is wrong with a bad command line', () => {
    expect(usageMessage('schedule', 'add', '--message', 'x')).toMatch(/one of --cron/);
    expect(usageMessage('schedule', 'add', '--cron', '* * * * * *', '--every', '1m', '--message', 'x')).toMatch(
      /one of --cron/,
    );
    expect(usageMessage('schedule', 'add', '--cron', '* * * * *', '--message', 'x')).toMatch(/^--cron: must be six/);
    expect(
      usageMessage('schedule', 'add', '--cron', '0 0 9 * * *', '--time-zone', 'Mars/Olympus', '--message', 'x'),
    ).toMatch(/^--time-zone:/);
    expect(usageMessage('schedule', 'add', '--every', '1m', '--time-zone', 'UTC', '--message', 'x')).toMatch(
      /--time-zone goes with --cron/,
    );
    expect(usageMessage('schedule', 'add', '--every', '1m')).toMatch(/needs --message/);
    expect(usageMessage('schedule', 'add', '--every', '1m', '--message', 'x', '--missed', 'never')).toMatch(
      /--missed: run_once or skip/,
    );
    expect(usageMessage('schedule', 'add', '--every', '1m', '--message', 'x', '--to', 'c1', '--template', 't')).toMatch(
      /not with --to/,
    );
    expect(usageMessage('schedule', 'pause', 'wh_1')).toMatch(/not a schedule id/);
    expect(usageMessage('schedule', 'list', '--cron', '* * * * * *')).toMatch(/does not take --cron/);
    expect(usageMessage('schedule', 'frobnicate')).toMatch(/the schedule command is/);
  });

  it('adds, lists, shows, pauses, resumes, runs and deletes through the client', async () => {
    const calls: unknown[][] = [];
    const client = recordingClient(calls);
    const added = await run(
      ['schedule', 'add', '--cron', '0 30 9 * * MON-FRI', '--time-zone', 'Europe/Paris', '--message', 'standup notes'],
      client,
    );
    expect(added).toMatchObject({ code: 0, stdout: `${ID}\n` });
    expect(added.stderr).toContain('cron "0 30 9 * * MON-FRI" Europe/Paris');
    const listed = await run(['schedule', 'list'], client);
    expect(listed.stdout).toMatch(/ID\s+STATUS\s+WHEN\s+DOES\s+NEXT \(UTC\)\s+LAST RUN/);
    expect(listed.stdout).toContain('failed 1m ago');
    const shown = await run(['schedule', 'get', ID], client);
    expect(shown.stdout).toContain('last run:    failed 1m ago: capacity_exhausted: Too many running.');
    for (const sub of ['pause', 'resume', 'run', 'rm']) expect((await run(['schedule', sub, ID], client)).code).toBe(0);
    expect(calls.map((call) => call[0])).toEqual([
      'createSchedule',
      'listSchedules',
      'getSchedule',
      'pauseSchedule',
      'resumeSchedule',
      'runSchedule',
      'deleteSchedule',
    ]);
    const missing = await run(['schedule', 'rm', `sch_${'0'.repeat(32)}`], client);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('schedule_not_found');
  });
});
