import { describe, expect, it } from 'vitest';
import { buildView } from '@flotilla/view';
import { condensationReasons, effectiveTokenLimit, isHardReason } from './condensation-reasons.js';
import { parseCondenserConfig } from './condenser-config.js';
import { TestLog } from './test-support/test-log.js';
import { weighView } from './token-count.js';

function smallLog(): TestLog {
  const log = new TestLog();
  log.system();
  log.user('fix the build');
  log.batch({ size: 2, output: 'x'.repeat(400) });
  log.agent('done');
  return log;
}

describe('condensationReasons', () => {
  it('finds none for a small view', () => {
    expect(condensationReasons(buildView(smallLog().events), parseCondenserConfig())).toEqual([]);
  });

  it('reports an unhandled condensation request, until a condensation handles it', () => {
    const log = smallLog();
    log.requestCondensation();
    expect(condensationReasons(buildView(log.events), parseCondenserConfig())).toEqual(['request']);
  });

  it('reports the soft events trigger when the view holds more than maxEvents items', () => {
    const log = smallLog();
    const config = parseCondenserConfig({ maxEvents: 8, keepFirst: 1 });
    expect(condensationReasons(buildView(log.events), config)).toEqual([]);
    log.batch({ size: 3 });
    expect(buildView(log.events).items.length).toBe(13);
    expect(condensationReasons(buildView(log.events), config)).toEqual(['events']);
  });

  it('reports the hard tokens trigger against the stricter of maxTokens and the model limit', () => {
    const view = buildView(smallLog().events);
    const total = weighView(view).total;
    expect(condensationReasons(view, parseCondenserConfig({ maxTokens: total }))).toEqual([]);
    expect(condensationReasons(view, parseCondenserConfig({ maxTokens: total - 1 }))).toEqual(['tokens']);
    expect(
      condensationReasons(view, parseCondenserConfig({ maxTokens: 1_000_000 }), { maxInputTokens: total - 1 }),
    ).toEqual(['tokens']);
    expect(condensationReasons(view, parseCondenserConfig(), { maxInputTokens: total })).toEqual([]);
  });

  it('uses an injected token counter', () => {
    const view = buildView(smallLog().events);
    const config = parseCondenserConfig({ maxTokens: 100 });
    expect(condensationReasons(view, config, { countTokens: () => 1 })).toEqual([]);
    expect(condensationReasons(view, config, { countTokens: () => 50 })).toEqual(['tokens']);
  });

  it('lists hard reasons first; only events is soft', () => {
    const log = smallLog();
    log.batch({ size: 4 });
    log.requestCondensation();
    const reasons = condensationReasons(
      buildView(log.events),
      parseCondenserConfig({ maxEvents: 8, keepFirst: 1, maxTokens: 10 }),
    );
    expect(reasons).toEqual(['request', 'tokens', 'events']);
    expect(reasons.map(isHardReason)).toEqual([true, true, false]);
  });

  it('knows no token limit unless one is configured or the model reports one', () => {
    expect(effectiveTokenLimit({})).toBeUndefined();
    expect(effectiveTokenLimit({ maxTokens: 500 }, 800)).toBe(500);
    expect(effectiveTokenLimit({}, 800)).toBe(800);
  });
});
