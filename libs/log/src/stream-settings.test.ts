import { describe, expect, it } from 'vitest';
import { EventLog } from './event-log.js';
import { logFixture } from './test-support/fixtures.js';

describe('the events stream against the configured settings', () => {
  it('creates a new stream with the configured retention', async () => {
    await using fixture = await logFixture({ maxAgeMs: 86_400_000, maxBytes: 1 << 30 });
    const config = (await fixture.log.jsm.streams.info(fixture.log.streamName)).config;
    expect(config.max_age).toBe(86_400_000 * 1e6);
    expect(config.max_bytes).toBe(1 << 30);
    expect(config.num_replicas).toBe(1);
    expect(fixture.log.storageWarning).toBeUndefined();
  });

  it('reports an existing stream whose settings differ, naming what to run, and changes nothing', async () => {
    await using fixture = await logFixture();
    const reopened = await EventLog.open(fixture.nc, {
      streamName: fixture.log.streamName,
      subjectPrefix: fixture.log.subjectPrefix,
      replicas: 3,
      maxAgeMs: 30 * 86_400_000,
      maxBytes: 5_000_000,
      duplicateWindowMs: 60_000,
    });
    expect(reopened.storageWarning).toBe(
      `stream ${fixture.log.streamName} exists with other settings than configured: replicas 1 (configured 3), max age unlimited (configured 30d), max bytes unlimited (configured 5000000 B), duplicate window 120000ms (configured 60000ms). ` +
        `They are not changed automatically; to apply them, run with the admin credential: nats stream edit ${fixture.log.streamName} --replicas 3 --max-age 2592000000ms --max-bytes 5000000 --dupe-window 60000ms`,
    );
    const config = (await fixture.log.jsm.streams.info(fixture.log.streamName)).config;
    expect([config.num_replicas, config.max_age, config.max_bytes]).toEqual([1, 0, -1]);
  });

  it('refuses a stream without direct gets, saying how to allow them', async () => {
    await using fixture = await logFixture();
    const config = (await fixture.log.jsm.streams.info(fixture.log.streamName)).config;
    await fixture.log.jsm.streams.update(fixture.log.streamName, { ...config, allow_direct: false });
    await expect(
      EventLog.open(fixture.nc, { streamName: fixture.log.streamName, subjectPrefix: fixture.log.subjectPrefix }),
    ).rejects.toThrow(`nats stream edit ${fixture.log.streamName} --allow-direct`);
  });
});
