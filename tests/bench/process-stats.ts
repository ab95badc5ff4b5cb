import { readFile } from 'node:fs/promises';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // fields after the command (which may hold spaces) start at field 3; utime and stime are fields 14 and 15
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** Resident and peak resident memory of a process in MiB, from /proc/<pid>/status. */
export async function memoryMiB(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** Sums a Prometheus metric's samples by one label, e.g. handled commits by outcome. */
export async function sumByLabel(metricsUrl: string, metric: string, label: string): Promise<Map<string, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const totals = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`)) continue;
    const value = new RegExp(`${label}="([^"]*)"`).exec(line)?.[1] ?? '';
    totals.set(value, (totals.get(value) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return totals;
}

/** Read and write system calls a process has made so far (sockets and files alike), from /proc/<pid>/io. */
export async function syscalls(pid: number): Promise<{ reads: number; writes: number }> {
  const io = await readFile(`/proc/${pid}/io`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(io)?.[1] ?? Number.NaN);
  return { reads: field('syscr'), writes: field('syscw') };
}
