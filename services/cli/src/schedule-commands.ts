import type { Schedule } from '@flotilla/api';
import type { CliClient } from './cli-client.js';
import { relativeTime } from './format-resources.js';
import type { ScheduleCommand } from './schedule-args.js';
import type { Terminal } from './terminal.js';
import { clip, formatColumns } from './text.js';

export type ScheduleContext = { readonly out: Terminal; readonly err: Terminal; readonly now: () => Date };

/** Runs `schedule add|list|get|pause|resume|run|rm`. */
export async function executeScheduleCommand(
  command: ScheduleCommand,
  client: CliClient,
  context: ScheduleContext,
): Promise<void> {
  const { out, err } = context;
  const show = (schedule: Schedule, json: boolean): void => {
    if (json) out.line(JSON.stringify(schedule, null, 2));
    else out.lines(describeSchedule(schedule, context.now()));
  };
  switch (command.name) {
    case 'schedule-add': {
      const created = await client.createSchedule(command.body);
      if (command.json) out.line(JSON.stringify(created, null, 2));
      else out.line(created.id);
      err.line(`note: schedule ${created.id} runs ${whenText(created)}: ${actionText(created)}`);
      return;
    }
    case 'schedule-list': {
      const schedules = await client.listSchedules();
      if (command.json) out.line(JSON.stringify(schedules, null, 2));
      else if (schedules.length === 0) err.line('no schedules');
      else {
        const now = context.now();
        const rows = schedules.map((schedule) => [
          schedule.id,
          schedule.status,
          clip(whenText(schedule), 40),
          clip(actionText(schedule), 40),
          schedule.next_run_at === null ? '-' : schedule.next_run_at.slice(0, 19).replace('T', ' '),
          schedule.last_run === null
            ? '-'
            : `${schedule.last_run.outcome} ${relativeTime(new Date(schedule.last_run.handled_at), now)}`,
        ]);
        out.lines(formatColumns([['ID', 'STATUS', 'WHEN', 'DOES', 'NEXT (UTC)', 'LAST RUN'], ...rows]));
      }
      return;
    }
    case 'schedule-get':
      show(await client.getSchedule(command.id), command.json);
      return;
    case 'schedule-pause':
      await client.pauseSchedule(command.id);
      out.line(`paused schedule ${command.id}`);
      return;
    case 'schedule-resume':
      await client.resumeSchedule(command.id);
      out.line(`resumed schedule ${command.id}`);
      return;
    case 'schedule-run':
      await client.runSchedule(command.id);
      out.line(`schedule ${command.id} runs now (flotilla schedule get ${command.id} shows the outcome)`);
      return;
    case 'schedule-rm':
      await client.deleteSchedule(command.id);
      out.line(`deleted schedule ${command.id}`);
      return;
  }
}

export function whenText(schedule: Schedule): string {
  const { when } = schedule;
  if ('at' in when) return `at ${when.at}`;
  if ('every' in when) return `every ${when.every}`;
  return `cron "${when.cron}" ${when.time_zone ?? 'UTC'}`;
}

export function actionText(schedule: Schedule): string {
  const { action } = schedule;
  return action.type === 'send_message'
    ? `send to ${action.conversation}: ${action.text}`
    : `new conversation${action.template ? ` (${action.template})` : ''}: ${action.message}`;
}

/** A schedule for people: one field a line. */
export function describeSchedule(schedule: Schedule, now: Date): string[] {
  const last = schedule.last_run;
  return [
    `id:          ${schedule.id}`,
    `status:      ${schedule.status}`,
    `when:        ${whenText(schedule)}`,
    `does:        ${actionText(schedule)}`,
    `missed runs: ${schedule.missed_runs}`,
    `next run:    ${schedule.next_run_at ?? '-'}`,
    `runs:        ${schedule.runs}`,
    `last run:    ${last === null ? '-' : `${last.outcome} ${relativeTime(new Date(last.handled_at), now)}${last.conversation ? ` (${last.conversation})` : ''}${last.error ? `: ${last.error.code}: ${last.error.message}` : ''}`}`,
    ...(schedule.description === null ? [] : [`description: ${schedule.description}`]),
  ];
}
