import { describe, expect, it } from 'vitest';
import { parseCommit } from './commit.js';
import { ProtocolError } from './errors.js';
import { EVENT_TYPES, parseEvent } from './event.js';
import { fixtureVersions, goldenCommits, goldenEvents, negativeFixtures } from './test-support/fixtures.js';
import { CURRENT_PROTOCOL_VERSION, protocolVersionOf, SUPPORTED_PROTOCOL_VERSIONS } from './version.js';

/** A value as it travels: the JSON text of what we parsed, read back. */
function throughJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}

function protocolErrorOf(parse: () => unknown): ProtocolError {
  try {
    parse();
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  throw new Error('expected a ProtocolError, but the value parsed');
}

describe('golden fixtures', () => {
  it('exist for every supported protocol version', () => {
    expect(fixtureVersions()).toEqual([...SUPPORTED_PROTOCOL_VERSIONS]);
    expect(fixtureVersions()).toContain(CURRENT_PROTOCOL_VERSION);
  });

  it.each(EVENT_TYPES)('cover event type %s in the version that introduced it', (type) => {
    const introduced = protocolVersionOf(type);
    const names = goldenEvents(introduced).filter((fixture) => fixture.type === type);
    expect(names.length, `add libs/events/fixtures/v${introduced}/${type}.json`).toBeGreaterThan(0);
  });

  it('of each version carry that version, or an older one their type had already', () => {
    for (const fixture of goldenEvents()) {
      const v = (fixture.value as { v: number }).v;
      expect(v, fixture.name).toBeLessThanOrEqual(fixture.version);
      expect(v, fixture.name).toBeGreaterThanOrEqual(protocolVersionOf(fixture.type));
    }
    for (const fixture of goldenCommits())
      expect((fixture.value as { v: number }).v, fixture.name).toBe(fixture.version);
  });

  describe.each(fixtureVersions())('v%i events', (version) => {
    it.each(goldenEvents(version).map((fixture) => [fixture.name, fixture] as const))(
      '%s parses and round-trips',
      (_name, fixture) => {
        const event = parseEvent(fixture.value);
        expect(event.type).toBe(fixture.type);
        expect(throughJson(event)).toStrictEqual(fixture.value);
      },
    );
  });

  describe.each(fixtureVersions())('v%i commits', (version) => {
    it.each(goldenCommits(version).map((fixture) => [fixture.name, fixture] as const))(
      '%s parses and round-trips',
      (_name, fixture) => {
        const commit = parseCommit(fixture.value);
        expect(commit.events.length).toBeGreaterThan(0);
        expect(throughJson(commit)).toStrictEqual(fixture.value);
      },
    );
  });

  it('include a parallel batch: several actions of one response in one commit', () => {
    const batches = goldenCommits().filter(({ value }) => {
      const actions = parseCommit(value).events.filter((event) => event.type === 'action');
      return actions.length >= 3 && new Set(actions.map((action) => action.response_id)).size === 1;
    });
    expect(batches.length).toBeGreaterThan(0);
  });
});

describe('negative fixtures', () => {
  const fixtures = negativeFixtures();

  it('exist for events and for commits', () => {
    expect(fixtures.filter((fixture) => fixture.kind === 'event').length).toBeGreaterThan(10);
    expect(fixtures.filter((fixture) => fixture.kind === 'commit').length).toBeGreaterThan(5);
  });

  it.each(fixtures.map((fixture) => [fixture.name, fixture] as const))(
    '%s is rejected naming the field',
    (_name, fixture) => {
      const error = protocolErrorOf(() =>
        fixture.kind === 'event' ? parseEvent(fixture.value) : parseCommit(fixture.value),
      );
      expect(error.code).toBe(fixture.expect.code);
      expect(error.isRetryable).toBe(false);
      // Exactly one fault per fixture: every issue names the expected field.
      expect(error.issues.map((issue) => issue.path)).toEqual(error.issues.map(() => fixture.expect.path));
      expect(error.issues.length).toBeGreaterThan(0);
      if (fixture.expect.code !== 'unsupported_protocol_version') expect(error.message).toContain(fixture.expect.path);
    },
  );
});
