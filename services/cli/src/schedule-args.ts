import { CreateScheduleBody, MISSED_RUN_POLICIES, ScheduleId } from '@flotilla/api';
import { usageError } from './errors.js';

export type ScheduleCommand =
  | { readonly name: 'schedule-add'; readonly body: CreateScheduleBody; readonly json: boolean }
  | { readonly name: 'schedule-list'; readonly json: boolean }
  | { readonly name: 'schedule-get'; readonly id: string; readonly json: boolean }
  | { readonly name: 'schedule-pause' | 'schedule-resume' | 'schedule-run' | 'schedule-rm'; readonly id: string };

export type ScheduleFlags = {
  readonly cron?: string;
  readonly every?: string;
  readonly at?: string;
  readonly timeZone?: string;
  readonly message?: string;
  readonly to?: string;
  readonly template?: string;
  readonly title?: string;
  readonly missed?: string;
  readonly description?: string;
  readonly json?: boolean;
};

const FLAG_NAMES: Readonly<Record<keyof ScheduleFlags, string>> = {
  cron: 'cron',
  every: 'every',
  at: 'at',
  timeZone: 'time-zone',
  message: 'message',
  to: 'to',
  template: 'template',
  title: 'title',
  missed: 'missed',
  description: 'description',
  json: 'json',
};
const SHAPE =
  'the schedule command is: flotilla schedule add (--cron EXPR [--time-zone TZ] | --every 5m | --at TIME) --message TEXT [--to ID], schedule list, schedule get|pause|resume|run|rm ID';

/** `schedule add|list|get|pause|resume|run|rm …` (the words after `schedule`). */
export function scheduleCommandOf(rest: readonly string[], flags: ScheduleFlags): ScheduleCommand {
  const [sub, ...words] = rest;
  const only = (allowed: readonly (keyof ScheduleFlags)[]): void => {
    for (const flag of Object.keys(FLAG_NAMES) as (keyof ScheduleFlags)[]) {
      if (flags[flag] !== undefined && !allowed.includes(flag))
        throw usageError(`schedule ${sub} does not take --${FLAG_NAMES[flag]}`);
    }
  };
  const id = (): string => {
    if (words.length !== 1)
      throw usageError(
        `schedule ${sub} needs the schedule's ID (flotilla schedule list shows them), e.g. flotilla schedule ${sub} sch_0123…`,
      );
    if (!ScheduleId.safeParse(words[0]).success)
      throw usageError(
        `ID "${words[0]}" is not a schedule id: sch_ and 32 hex digits (flotilla schedule list shows them)`,
      );
    return words[0]!;
  };
  switch (sub) {
    case 'add': {
      only(['cron', 'every', 'at', 'timeZone', 'message', 'to', 'template', 'title', 'missed', 'description', 'json']);
      if (words.length > 0)
        throw usageError(
          `schedule add: unexpected argument "${words[0]}" (quote a cron expression: --cron "0 30 9 * * MON-FRI")`,
        );
      return { name: 'schedule-add', body: addBody(flags), json: flags.json ?? false };
    }
    case 'list':
      only(['json']);
      if (words.length > 0) throw usageError(`schedule list: unexpected argument "${words[0]}"`);
      return { name: 'schedule-list', json: flags.json ?? false };
    case 'get':
      only(['json']);
      return { name: 'schedule-get', id: id(), json: flags.json ?? false };
    case 'pause':
    case 'resume':
    case 'run':
    case 'rm':
      only([]);
      return { name: `schedule-${sub}`, id: id() };
    default:
      throw usageError(SHAPE);
  }
}

/** The request `schedule add` makes, checked as the gateway checks it (its first problem named by flag). */
function addBody(flags: ScheduleFlags): CreateScheduleBody {
  const whens = [flags.cron, flags.every, flags.at].filter((value) => value !== undefined).length;
  if (whens !== 1)
    throw usageError(
      'schedule add needs one of --cron "SEC MIN HOUR DOM MON DOW" (with --time-zone), --every 5m, --at 2026-12-24T18:00:00Z',
    );
  if (flags.timeZone !== undefined && flags.cron === undefined)
    throw usageError('--time-zone goes with --cron (an --at time carries its own offset)');
  if (flags.message === undefined)
    throw usageError(
      'schedule add needs --message: the first message of the conversation it creates (or, with --to ID, the message it sends)',
    );
  if (flags.to !== undefined && (flags.template !== undefined || flags.title !== undefined))
    throw usageError('--template and --title are for the conversations a schedule creates, not with --to');
  if (flags.missed !== undefined && !(MISSED_RUN_POLICIES as readonly string[]).includes(flags.missed))
    throw usageError(`--missed: ${MISSED_RUN_POLICIES.join(' or ')}`);
  const when =
    flags.cron !== undefined
      ? { cron: flags.cron, ...(flags.timeZone !== undefined ? { time_zone: flags.timeZone } : {}) }
      : flags.every !== undefined
        ? { every: flags.every }
        : { at: flags.at };
  const action =
    flags.to !== undefined
      ? { type: 'send_message', conversation: flags.to, text: flags.message }
      : {
          type: 'create_conversation',
          message: flags.message,
          ...(flags.template !== undefined ? { template: flags.template } : {}),
          ...(flags.title !== undefined ? { title: flags.title } : {}),
        };
  const parsed = CreateScheduleBody.safeParse({
    when,
    action,
    ...(flags.missed !== undefined ? { missed_runs: flags.missed } : {}),
    ...(flags.description !== undefined ? { description: flags.description } : {}),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.join('.');
    const flag = /time_zone/.test(path)
      ? 'time-zone'
      : /^when/.test(path)
        ? flags.cron !== undefined
          ? 'cron'
          : flags.every !== undefined
            ? 'every'
            : 'at'
        : /conversation/.test(path)
          ? 'to'
          : /message|text/.test(path)
            ? 'message'
            : (path.split('.').at(-1) ?? path);
    throw usageError(`--${flag}: ${issue.message}`);
  }
  return parsed.data;
}
