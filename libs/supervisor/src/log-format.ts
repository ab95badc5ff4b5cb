const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const SKIP = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'service', 'instance']);

/** Renders a pino JSON line as `12:00:01 step-worker INFO message key=value …`; other lines pass through. */
export function formatLogLine(name: string, line: string): string {
  if (!line.startsWith('{')) return `${name.padEnd(14)} ${line}`;
  try {
    const record = JSON.parse(line) as Record<string, unknown>;
    const time = typeof record['time'] === 'number' ? new Date(record['time']).toISOString().slice(11, 19) : '';
    const level = LEVELS[Number(record['level'])] ?? String(record['level'] ?? '');
    const extra = Object.entries(record)
      .filter(([field]) => !SKIP.has(field))
      .map(([field, value]) => `${field}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
      .join(' ');
    return `${time} ${name.padEnd(14)} ${level.padEnd(5)} ${String(record['msg'] ?? '')}${extra ? `  ${extra}` : ''}`;
  } catch {
    return `${name.padEnd(14)} ${line}`;
  }
}
