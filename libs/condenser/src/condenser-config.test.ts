import { describe, expect, it } from 'vitest';
import { CondenserConfig, parseCondenserConfig } from './condenser-config.js';
import { CondenserError } from './errors.js';

describe('CondenserConfig', () => {
  it('fills in the defaults', () => {
    expect(parseCondenserConfig()).toEqual({
      maxEvents: 120,
      keepFirst: 2,
      minimumProgress: 0.1,
      summaryMaxOutputTokens: 2_048,
      maxEventChars: 10_000,
      maxSummaryAttempts: 8,
    });
  });

  it('round-trips through JSON', () => {
    const config = parseCondenserConfig({ maxEvents: 60, maxTokens: 50_000 });
    expect(parseCondenserConfig(JSON.parse(JSON.stringify(config)))).toEqual(config);
  });

  it('rejects unknown fields and impossible values with a CondenserError naming them', () => {
    expect(() => parseCondenserConfig({ maxEvent: 10 })).toThrow(CondenserError);
    expect(() => parseCondenserConfig({ minimumProgress: 0 })).toThrow(/minimumProgress/);
    expect(() => parseCondenserConfig({ maxEvents: 20, keepFirst: 9 })).toThrow(/keepFirst/);
    const thrown = (() => {
      try {
        parseCondenserConfig({ maxTokens: -1 });
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(thrown).toMatchObject({ code: 'invalid_config', isRetryable: false });
  });

  it('is a zod schema callers can embed', () => {
    expect(CondenserConfig.safeParse({ maxEvents: 30, keepFirst: 3 }).success).toBe(true);
  });
});
