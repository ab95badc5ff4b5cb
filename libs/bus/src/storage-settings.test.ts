import { describe, expect, it } from 'vitest';
import { loadStorageSettings, replicasWarning, streamDrift } from './storage-settings.js';

describe('storage settings', () => {
  it('defaults to one replica and unlimited retention, and reads the variables', () => {
    expect(loadStorageSettings({})).toEqual({ replicas: 1, streamMaxAgeMs: 0, streamMaxBytes: -1 });
    expect(
      loadStorageSettings({
        FLOTILLA_REPLICAS: '3',
        FLOTILLA_STREAM_MAX_AGE_MS: '86400000',
        FLOTILLA_STREAM_MAX_BYTES: '1000',
      }),
    ).toEqual({ replicas: 3, streamMaxAgeMs: 86_400_000, streamMaxBytes: 1000 });
  });

  it.each([
    [{ FLOTILLA_REPLICAS: 'three' }, /FLOTILLA_REPLICAS/],
    [{ FLOTILLA_REPLICAS: '7' }, /FLOTILLA_REPLICAS/],
    [{ FLOTILLA_STREAM_MAX_AGE_MS: '-5' }, /FLOTILLA_STREAM_MAX_AGE_MS/],
    [{ FLOTILLA_STREAM_MAX_BYTES: '1.5' }, /FLOTILLA_STREAM_MAX_BYTES/],
  ])('refuses %j naming the variable', (environment, message) => {
    expect(() => loadStorageSettings(environment)).toThrow(message);
  });

  it('warns when a clustered server is given one replica', () => {
    expect(replicasWarning({ cluster: 'prod' }, 1)).toMatch(
      /part of cluster prod but FLOTILLA_REPLICAS=1.*set FLOTILLA_REPLICAS=3/,
    );
    expect(replicasWarning({ cluster: 'prod' }, 3)).toBeUndefined();
    expect(replicasWarning({}, 1)).toBeUndefined();
  });

  it('compares only what is configured', () => {
    expect(streamDrift({ num_replicas: 3, max_age: 5, max_bytes: 9 }, { num_replicas: 3 })).toEqual([]);
    expect(streamDrift({ num_replicas: 1 }, { num_replicas: 3 }).map((drift) => drift.flag)).toEqual(['--replicas 3']);
  });
});
