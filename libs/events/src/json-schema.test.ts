import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from './event.js';
import { buildJsonSchema, JSON_SCHEMA_FILE_NAME, JSON_SCHEMA_ID, renderJsonSchema } from './json-schema.js';
import { anyEvent } from './test-support/arbitraries.js';
import { mutatedEvent } from './test-support/mutations.js';
import { fixtureVersions, goldenCommits, goldenEvents, negativeFixtures } from './test-support/fixtures.js';
import { CURRENT_PROTOCOL_VERSION } from './version.js';

const SCHEMA_PATH = join(import.meta.dirname, '..', 'schema', JSON_SCHEMA_FILE_NAME);

function compile() {
  // Strict mode: the schema must use no keyword ajv does not know. Two relaxations: `required`
  // inside oneOf/anyOf branches is the idiomatic way to say "one of these fields", and formats
  // are annotations (the date-time pattern does the enforcing).
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true, validateFormats: false });
  ajv.addSchema(JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as object);
  const validator = (ref: string) => {
    const validate = ajv.getSchema(`${JSON_SCHEMA_ID}#/$defs/${ref}`);
    if (validate === undefined) throw new Error(`no $defs/${ref}`);
    return (value: unknown) => validate(value) as boolean;
  };
  const root = ajv.getSchema(JSON_SCHEMA_ID);
  if (root === undefined) throw new Error('schema did not load');
  return { event: validator('Event'), commit: validator('Commit'), root: (value: unknown) => root(value) as boolean };
}

describe('the JSON Schema of each older protocol version', () => {
  // published files are frozen: a consumer pinned to one keeps reading that version's events
  const older = fixtureVersions().filter((version) => version < CURRENT_PROTOCOL_VERSION);

  it.each(older)('v%i is still published and accepts its golden fixtures', (version) => {
    const path = join(import.meta.dirname, '..', 'schema', `flotilla-events.v${version}.schema.json`);
    const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true, validateFormats: false });
    ajv.addSchema(JSON.parse(readFileSync(path, 'utf8')) as object);
    const event = ajv.getSchema(`urn:flotilla:events:v${version}#/$defs/Event`)!;
    const commit = ajv.getSchema(`urn:flotilla:events:v${version}#/$defs/Commit`)!;
    for (const fixture of goldenEvents(version)) expect(event(fixture.value), fixture.name).toBe(true);
    for (const fixture of goldenCommits(version)) expect(commit(fixture.value), fixture.name).toBe(true);
  });
});

describe('an older reader of a newer event', () => {
  it('refuses, at v, every v4 golden event that needs v4 (a stored image): never misreads it', () => {
    const path = join(import.meta.dirname, '..', 'schema', 'flotilla-events.v3.schema.json');
    const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true, validateFormats: false });
    ajv.addSchema(JSON.parse(readFileSync(path, 'utf8')) as object);
    const event = ajv.getSchema('urn:flotilla:events:v3#/$defs/Event')!;
    const needsV4 = goldenEvents(4).filter((fixture) => JSON.stringify(fixture.value).includes('"sha256"'));
    expect(needsV4.length).toBeGreaterThan(0);
    for (const fixture of needsV4) {
      expect(event(fixture.value), fixture.name).toBe(false);
      // with its v lowered to 3 it is still refused: the field is unknown to v3
      expect(event({ ...(fixture.value as object), v: 3 }), fixture.name).toBe(false);
    }
  });
});

describe('a v4 reader of a v5 event', () => {
  it('refuses, at v, every v5 golden llm_usage naming a fallback: never misreads it', () => {
    const path = join(import.meta.dirname, '..', 'schema', 'flotilla-events.v4.schema.json');
    const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true, validateFormats: false });
    ajv.addSchema(JSON.parse(readFileSync(path, 'utf8')) as object);
    const event = ajv.getSchema('urn:flotilla:events:v4#/$defs/Event')!;
    const needsV5 = goldenEvents(5).filter(
      (fixture) => fixture.type === 'llm_usage' && 'fallback' in (fixture.value as object),
    );
    expect(needsV5.length).toBeGreaterThan(0);
    for (const fixture of needsV5) {
      expect(event(fixture.value), fixture.name).toBe(false);
      expect(event({ ...(fixture.value as object), v: 4 }), fixture.name).toBe(false);
      // without the field, it is a v1 event every reader takes
      const { fallback: _fallback, ...plain } = fixture.value as Record<string, unknown>;
      expect(event({ ...plain, v: 1 }), fixture.name).toBe(true);
    }
  });
});

describe('published JSON Schema', () => {
  const schema = compile();

  it('is up to date with the zod schemas (regenerate with `npm run schema`)', () => {
    expect(readFileSync(SCHEMA_PATH, 'utf8')).toBe(renderJsonSchema());
  });

  it('is deterministic, draft 2020-12, with an id, a title and a trailing newline', () => {
    expect(renderJsonSchema()).toBe(renderJsonSchema());
    expect(renderJsonSchema().endsWith('}\n')).toBe(true);
    const document = buildJsonSchema();
    expect(document).toMatchObject({ $schema: 'https://json-schema.org/draft/2020-12/schema', $id: JSON_SCHEMA_ID });
    expect(document.title).toContain('Flotilla');
    expect(Object.keys(document.$defs ?? {})).toEqual(expect.arrayContaining(['Event', 'Commit']));
    expect(document.$defs?.['Commit']?.properties?.['events']).toMatchObject({ items: { $ref: '#/$defs/Event' } });
  });

  it.each(goldenEvents().map((fixture) => [fixture.name, fixture.value] as const))(
    'accepts golden event %s',
    (_name, value) => {
      expect(schema.event(value)).toBe(true);
      expect(schema.root(value)).toBe(true);
    },
  );

  it.each(goldenCommits().map((fixture) => [fixture.name, fixture.value] as const))(
    'accepts golden commit %s',
    (_name, value) => {
      expect(schema.commit(value)).toBe(true);
      expect(schema.root(value)).toBe(true);
    },
  );

  it.each(negativeFixtures().map((fixture) => [fixture.name, fixture] as const))(
    'agrees on negative fixture %s',
    (_name, fixture) => {
      const validate = fixture.kind === 'event' ? schema.event : schema.commit;
      // Cross-field commit rules (contiguous seqs, one conversation) are beyond JSON Schema;
      // the schema's $comment says so and readers check them. Everything else it rejects.
      expect(validate(fixture.value)).toBe(fixture.cross_field === true);
    },
  );

  it('agrees with zod on random valid events', () => {
    fc.assert(
      fc.property(anyEvent(EVENT_TYPES), (event) => {
        expect(schema.event(JSON.parse(JSON.stringify(event)))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with zod on random broken events', () => {
    fc.assert(
      fc.property(mutatedEvent, ({ value }) => {
        expect(schema.event(value)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});
