import { randomBytes } from 'node:crypto';
import { maskSecrets } from '@flotilla/secrets';
import { median, ms, ratio, table } from './stats.js';

/**
 * Masking a command's output (the tool runner masks every observation and saved output before it is
 * stored): a 10 MB output of hex dumps, base64 and log lines with three secrets of a conversation in
 * it a few times, masked in every form a shell command makes of a value (one pass for every form),
 * against the baseline measured in the same run, alternating: masking as it was before those
 * forms, the anchored forms alone (the value, its base64 and base64url, JSON escaping, CRLF, long
 * lines) searched for one after another; and, for what the one pass buys, every form searched for
 * one after another.
 */
export async function benchMasking(runs = 15, megabytes = 10): Promise<string> {
  const secrets = {
    GITHUB_TOKEN: 'ghp_Sup3rS3cret_4817_zebra',
    NPM_TOKEN: 'npm_TenantDefault_9921_okapi',
    DB_PASSWORD: 'correct horse battery staple',
  };
  const lines: string[] = [];
  let size = 0;
  for (let index = 0; size < megabytes * 1024 * 1024; index += 1) {
    const line =
      index % 5000 === 0
        ? `config token=${secrets.GITHUB_TOKEN} auth=${Buffer.from(`x${secrets.NPM_TOKEN}`).toString('base64')} pw=${[...secrets.DB_PASSWORD].reverse().join('')}`
        : index % 3 === 0
          ? randomBytes(32).toString('hex')
          : index % 3 === 1
            ? randomBytes(48).toString('base64')
            : `2026-12-05T10:00:${String(index % 60).padStart(2, '0')}Z INFO request ${index} served in ${index % 97} ms`;
    lines.push(line);
    size += line.length + 1;
  }
  const text = lines.join('\n');
  const variants = {
    encodings: () => maskSecrets(text, secrets, 'encodings'),
    anchored: () => maskSecrets(text, secrets, 'anchored', 'per-needle'),
    perNeedle: () => maskSecrets(text, secrets, 'encodings', 'per-needle'),
  };
  const times = { encodings: [] as number[], anchored: [] as number[], perNeedle: [] as number[] };
  const masked = { encodings: 0, anchored: 0, perNeedle: 0 };
  for (let run = 0; run < runs + 2; run += 1) {
    for (const variant of ['anchored', 'encodings', 'perNeedle'] as const) {
      const started = performance.now();
      const out = variants[variant]();
      const elapsed = performance.now() - started;
      if (run >= 2) times[variant].push(elapsed); // two warm-up rounds
      masked[variant] = (out.match(/<secret:/g) ?? []).length;
    }
  }
  const [all, anchored, perNeedle] = [median(times.encodings), median(times.anchored), median(times.perNeedle)];
  const rate = (p50: number): string => `${((megabytes / p50) * 1000).toFixed(0)} MB/s`;
  return [
    table([
      ['figure', 'every encoding, one pass', 'baseline: anchored forms, a search per form', 'ratio', 'goal'],
      [`mask a ${megabytes} MB output, p50`, ms(all), ms(anchored), ratio(all, anchored), 'no measurable cost'],
      ['throughput', rate(all), rate(anchored), '', ''],
      ['occurrences masked', String(masked.encodings), String(masked.anchored), '', ''],
      ['every encoding, a search per form', ms(perNeedle), '', ratio(perNeedle, anchored), ''],
    ]),
  ].join('\n');
}
