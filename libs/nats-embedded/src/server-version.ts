import { spawnSync } from 'node:child_process';

/**
 * The oldest nats-server Flotilla runs on. 2.12 brings what the bus is built on: direct-get
 * batches (reads without a consumer, 2.11), `Nats-Expected-Last-Subject-Sequence-Subject`,
 * per-message TTL and priority groups (2.11), atomic batch publish and message schedules (2.12).
 * `./dev` reads this line to decide whether a nats-server on PATH is new enough.
 */
export const MINIMUM_SERVER_VERSION = '2.12.0';

type Version = readonly [number, number, number];

function parseVersion(version: string): Version | undefined {
  const match = /(\d+)\.(\d+)\.(\d+)/.exec(version);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

/** Orders two `x.y.z` versions (a leading `v` or `nats-server: v` is ignored); unparseable ones sort first. */
export function compareVersions(a: string, b: string): number {
  const left = parseVersion(a) ?? [0, 0, 0];
  const right = parseVersion(b) ?? [0, 0, 0];
  for (let index = 0; index < 3; index += 1) {
    const difference = left[index]! - right[index]!;
    if (difference !== 0) return difference;
  }
  return 0;
}

export function isSupportedServerVersion(version: string): boolean {
  return parseVersion(version) !== undefined && compareVersions(version, MINIMUM_SERVER_VERSION) >= 0;
}

const binaryVersions = new Map<string, string | undefined>();

/** What `<binary> --version` reports (`2.15.1`), or undefined when it does not run; asked once per binary. */
export function binaryVersion(binary: string): string | undefined {
  if (!binaryVersions.has(binary)) {
    const result = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    const match = result.status === 0 ? /v?(\d+\.\d+\.\d+)/.exec(result.stdout) : null;
    binaryVersions.set(binary, match?.[1]);
  }
  return binaryVersions.get(binary);
}
