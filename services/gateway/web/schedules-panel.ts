import type { CreateScheduleBody, Schedule } from '@flotilla/api';
import type { FlotillaClient } from '@flotilla/client';
import { byId, h, show } from './dom.js';

export type SchedulesPanelHooks = {
  /** A request failed: tell the user. */
  onError(error: unknown): void;
};

const PLACEHOLDERS = {
  cron: '0 30 9 * * MON-FRI (sec min hour day month weekday)',
  every: '30m, 2h, 90s',
  at: '2026-12-24T18:00:00+01:00',
} as const;
type Kind = keyof typeof PLACEHOLDERS;
/** How often an open panel reads the schedules again (their runs change them). */
const REFRESH_MS = 5_000;

/**
 * The tenant's schedules: each with when it runs, what it does, its status and its next and last
 * runs, with Pause/Resume, Run now and Delete; and a form to schedule runs (a cron in a time
 * zone, an interval or a time; a new conversation with its first message, or a message to a
 * conversation). Read when the panel opens,
 * then every few seconds while it is open.
 */
export class SchedulesPanel {
  readonly #panel = byId<HTMLDetailsElement>('schedules-panel');
  readonly #count = byId('schedules-count');
  readonly #list = byId<HTMLUListElement>('schedules-list');
  readonly #note = byId('schedules-note');
  readonly #form = byId<HTMLFormElement>('schedule-form');
  readonly #kind = byId<HTMLSelectElement>('schedule-kind');
  readonly #value = byId<HTMLInputElement>('schedule-value');
  readonly #zone = byId<HTMLInputElement>('schedule-zone');
  readonly #message = byId<HTMLTextAreaElement>('schedule-message');
  readonly #missed = byId<HTMLSelectElement>('schedule-missed');
  readonly #to = byId<HTMLInputElement>('schedule-to');
  #timer: ReturnType<typeof setInterval> | undefined;
  #connected = false;

  constructor(
    readonly client: () => FlotillaClient,
    readonly hooks: SchedulesPanelHooks,
  ) {
    this.#zone.value = Intl.DateTimeFormat().resolvedOptions().timeZone;
    this.#kind.addEventListener('change', () => this.#kindChanged());
    this.#kindChanged();
    this.#panel.addEventListener('toggle', () => this.#follow());
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#create();
    });
  }

  /** A client is connected: an open panel reads its schedules. */
  start(): void {
    this.#connected = true;
    this.#follow();
  }

  stop(): void {
    this.#connected = false;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#list.replaceChildren();
    this.#count.textContent = '';
  }

  async refresh(): Promise<void> {
    if (!this.#connected) return;
    let schedules: Schedule[];
    try {
      schedules = await this.client().listSchedules();
    } catch (error) {
      this.hooks.onError(error);
      return;
    }
    this.#count.textContent = schedules.length > 0 ? `(${schedules.length})` : '';
    this.#list.replaceChildren(...schedules.map((schedule) => this.#item(schedule)));
    this.#showNote(schedules.length === 0 ? 'No schedules yet.' : undefined);
  }

  #follow(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    if (!this.#connected || !this.#panel.open) return;
    void this.refresh();
    this.#timer = setInterval(() => void this.refresh(), REFRESH_MS);
  }

  #item(schedule: Schedule): HTMLLIElement {
    const button = (label: string, testId: string, act: () => Promise<unknown>): HTMLButtonElement => {
      const element = h('button', { type: 'button', class: 'link-button', 'data-testid': testId }, label);
      element.addEventListener('click', () => void this.#act(act));
      return element;
    };
    const id = schedule.id;
    const last = schedule.last_run;
    return h(
      'li',
      { 'data-testid': 'schedule', 'data-id': id, 'data-status': schedule.status },
      h(
        'div',
        { class: 'schedule-line' },
        h(
          'span',
          { class: `schedule-status status-${schedule.status}`, 'data-testid': 'schedule-status' },
          schedule.status,
        ),
        h('span', {}, whenText(schedule)),
      ),
      h('div', { class: 'schedule-line muted' }, actionText(schedule)),
      h(
        'div',
        { class: 'schedule-line muted' },
        `next: ${schedule.next_run_at ? new Date(schedule.next_run_at).toLocaleString() : '—'} · runs: ${schedule.runs}`,
        last ? ` · last: ${last.outcome}${last.error ? ` (${last.error.code})` : ''}` : '',
      ),
      h(
        'div',
        { class: 'schedule-actions' },
        schedule.status === 'active' ? button('Pause', 'schedule-pause', () => this.client().pauseSchedule(id)) : null,
        schedule.status === 'paused'
          ? button('Resume', 'schedule-resume', () => this.client().resumeSchedule(id))
          : null,
        button('Run now', 'schedule-run', () => this.client().runSchedule(id)),
        button('Delete', 'schedule-delete', () => this.client().deleteSchedule(id)),
      ),
    );
  }

  async #act(action: () => Promise<unknown>): Promise<void> {
    try {
      await action();
    } catch (error) {
      this.hooks.onError(error);
    }
    await this.refresh();
  }

  async #create(): Promise<void> {
    const kind = this.#kind.value as Kind;
    const value = this.#value.value.trim();
    const zone = this.#zone.value.trim();
    const when =
      kind === 'cron'
        ? { cron: value, ...(zone ? { time_zone: zone } : {}) }
        : kind === 'every'
          ? { every: value }
          : { at: value };
    const message = this.#message.value.trim();
    const to = this.#to.value.trim();
    // a conversation's id given: each run messages it; else each run creates a conversation
    const action = to
      ? { type: 'send_message' as const, conversation: to, text: message }
      : { type: 'create_conversation' as const, message };
    const body: CreateScheduleBody = { when, action, missed_runs: this.#missed.value as 'run_once' | 'skip' };
    try {
      await this.client().createSchedule(body);
    } catch (error) {
      this.hooks.onError(error);
      return;
    }
    this.#value.value = '';
    this.#message.value = '';
    this.#to.value = '';
    await this.refresh();
  }

  #kindChanged(): void {
    const kind = this.#kind.value as Kind;
    this.#value.placeholder = PLACEHOLDERS[kind];
    show(this.#zone, kind === 'cron');
  }

  #showNote(text: string | undefined): void {
    this.#note.textContent = text ?? '';
    show(this.#note, text !== undefined);
  }
}

function whenText(schedule: Schedule): string {
  const { when } = schedule;
  if ('at' in when) return `at ${new Date(when.at).toLocaleString()}`;
  if ('every' in when) return `every ${when.every}`;
  return `cron ${when.cron} (${when.time_zone ?? 'UTC'})`;
}

function actionText(schedule: Schedule): string {
  const { action } = schedule;
  return action.type === 'send_message'
    ? `message to ${action.conversation}: ${action.text}`
    : `new conversation${action.template ? ` (${action.template})` : ''}: ${action.message}`;
}
