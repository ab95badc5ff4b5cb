import type { ConversationStatus } from '@flotilla/events';
import { h } from './dom.js';

const STATUS_LABELS: Record<ConversationStatus, string> = {
  idle: 'idle',
  running: 'running',
  paused: 'paused',
  waiting_for_confirmation: 'needs approval',
  finished: 'finished',
  error: 'error',
  stuck: 'stuck',
};

/** A coloured pill for a conversation status; `data-status` carries the raw value. */
export function statusBadge(status: ConversationStatus, testId = 'status-badge'): HTMLSpanElement {
  return h(
    'span',
    { class: `badge status-${status}`, 'data-testid': testId, 'data-status': status, title: status },
    STATUS_LABELS[status],
  );
}

export function statusLabel(status: ConversationStatus): string {
  return STATUS_LABELS[status];
}

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const dateFormat = new Intl.DateTimeFormat(undefined, {
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
});

const dayFormat = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric' });

/** `14:03:22` for an event's timestamp of today, `Dec 4, 2026, 14:03:22` for one of an earlier day (the viewer's time zone). */
export function clockTime(timestamp: string, now = new Date()): string {
  const at = new Date(timestamp);
  const time = timeFormat.format(at);
  return dayFormat.format(at) === dayFormat.format(now) ? time : `${dayFormat.format(at)}, ${time}`;
}

/** `just now`, `5 min ago`, or a date, for list entries. */
export function relativeTime(timestamp: string | null, now = Date.now()): string {
  if (timestamp === null) return '';
  const seconds = Math.round((now - Date.parse(timestamp)) / 1000);
  if (seconds < 45) return 'just now';
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  return dateFormat.format(new Date(timestamp));
}

const integer = new Intl.NumberFormat('en-US');
export function count(value: number): string {
  return integer.format(value);
}

export function usd(value: number): string {
  return value === 0 ? '$0' : value < 0.01 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Readable JSON for tool arguments: strings shown raw when that is all there is. */
export function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? String(value);
}

/** `512 B`, `1.5 KiB`, `3.2 MiB` for a size. */
export function bytes(value: number): string {
  if (value < 1024) return `${value} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let scaled = value / 1024;
  let unit = 0;
  while (scaled >= 1024 && unit < units.length - 1) {
    scaled /= 1024;
    unit += 1;
  }
  return `${scaled < 10 ? scaled.toFixed(1) : Math.round(scaled)} ${units[unit]}`;
}
