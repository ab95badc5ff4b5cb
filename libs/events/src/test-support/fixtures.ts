import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** libs/events/fixtures: golden fixtures per protocol version, and negative ones. */
export const FIXTURES_DIR = join(import.meta.dirname, '..', '..', 'fixtures');

export type GoldenFixture = {
  /** File name without `.json`, e.g. `action.input-null`. */
  readonly name: string;
  /** The event type the file name claims: the part before the first dot. */
  readonly type: string;
  /** The protocol version of the directory it sits in. */
  readonly version: number;
  readonly value: unknown;
};

export type NegativeFixture = {
  readonly name: string;
  readonly description: string;
  readonly kind: 'event' | 'commit';
  readonly value: unknown;
  readonly expect: { readonly code: string; readonly path: string };
  /** A rule JSON Schema cannot express (seq contiguity, one conversation per commit). */
  readonly cross_field?: boolean;
};

function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8')) as unknown;
}

function jsonFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.json'))
    .map((entry) => entry.name)
    .sort();
}

/** Every protocol version that has golden fixtures: v1, v2, … */
export function fixtureVersions(): number[] {
  return readdirSync(FIXTURES_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && /^v\d+$/.test(entry.name))
    .map((entry) => Number(entry.name.slice(1)))
    .sort((a, b) => a - b);
}

/** The golden events of one protocol version, or of every version when none is given. */
export function goldenEvents(version?: number): GoldenFixture[] {
  if (version === undefined) return fixtureVersions().flatMap((each) => goldenEvents(each));
  const directory = join(FIXTURES_DIR, `v${version}`);
  return jsonFiles(directory).map((file) => {
    const name = file.slice(0, -'.json'.length);
    return { name, type: name.split('.')[0] ?? name, version, value: readJson(join(directory, file)) };
  });
}

/** The golden commits of one protocol version, or of every version when none is given. */
export function goldenCommits(version?: number): GoldenFixture[] {
  if (version === undefined) return fixtureVersions().flatMap((each) => goldenCommits(each));
  const directory = join(FIXTURES_DIR, `v${version}`, 'commits');
  return jsonFiles(directory).map((file) => {
    const name = file.slice(0, -'.json'.length);
    return { name, type: 'commit', version, value: readJson(join(directory, file)) };
  });
}

export function negativeFixtures(): NegativeFixture[] {
  const directory = join(FIXTURES_DIR, 'invalid');
  return jsonFiles(directory).map((file) => ({
    name: file.slice(0, -'.json'.length),
    ...(readJson(join(directory, file)) as Omit<NegativeFixture, 'name'>),
  }));
}
