import { describe, expect, it } from 'vitest';
import { describeDatabase, loadSinkConfig } from './sink-config.js';

const url = 'postgres://flotilla:secret@db:5432/analytics';

describe("the sink's settings", () => {
  it('takes the defaults, and each setting given', () => {
    expect(loadSinkConfig({ FLOTILLA_DATABASE_URL: url })).toEqual({
      databaseUrl: url,
      lagIntervalMs: 1_000,
      transactions: 2,
      deleted: 'keep',
    });
    expect(
      loadSinkConfig({
        FLOTILLA_DATABASE_URL: url,
        FLOTILLA_SINK_LAG_INTERVAL_MS: '500',
        FLOTILLA_SINK_TRANSACTIONS: '4',
        FLOTILLA_SINK_DELETED: 'drop',
      }),
    ).toEqual({ databaseUrl: url, lagIntervalMs: 500, transactions: 4, deleted: 'drop' });
  });

  it('refuses a bad setting, naming its variable', () => {
    expect(() => loadSinkConfig({})).toThrow(/^FLOTILLA_DATABASE_URL is required/);
    expect(() => loadSinkConfig({ FLOTILLA_DATABASE_URL: 'mysql://db/x' })).toThrow(
      /^FLOTILLA_DATABASE_URL must be a postgres:\/\//,
    );
    expect(() => loadSinkConfig({ FLOTILLA_DATABASE_URL: url, FLOTILLA_SINK_TRANSACTIONS: '0' })).toThrow(
      /^FLOTILLA_SINK_TRANSACTIONS/,
    );
    expect(() => loadSinkConfig({ FLOTILLA_DATABASE_URL: url, FLOTILLA_SINK_DELETED: 'forget' })).toThrow(
      /^FLOTILLA_SINK_DELETED must be keep or drop/,
    );
  });

  it('never shows the password', () => {
    expect(describeDatabase(url)).toBe('postgres://flotilla:***@db:5432/analytics');
  });
});
