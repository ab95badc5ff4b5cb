import { runChaos } from './chaos-run.js';

/** `npm run chaos -- [--minutes 5] [--conversations 60] [--kill-every-ms 3000]`: the long chaos run. */
const args = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const index = args.indexOf(`--${name}`);
  if (index === -1) return fallback;
  const value = Number(args[index + 1]);
  if (!Number.isFinite(value) || value <= 0) {
    console.error(`--${name} needs a positive number`);
    process.exit(2);
  }
  return value;
};
const minutes = option('minutes', 5);
const result = await runChaos({
  durationMs: minutes * 60_000,
  conversations: option('conversations', 60),
  steps: option('steps', Math.max(8, Math.round(minutes * 12))),
  actionSeconds: 0.3,
  killEveryMs: option('kill-every-ms', 3_000),
  log: (line) => console.log(`[chaos] ${line}`),
});
console.log(JSON.stringify({ ...result, auditFailures: result.auditFailures.slice(0, 5) }, null, 2));
const ok =
  result.finished === result.conversations &&
  result.duplicatedEffects.length === 0 &&
  result.missingEffects.length === 0 &&
  result.auditFailures.length === 0;
console.log(ok ? 'chaos: PASS' : 'chaos: FAIL');
process.exit(ok ? 0 : 1);
