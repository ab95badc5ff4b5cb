import { describe, expect, it } from 'vitest';
import { parseCliArgs } from './args.js';

const now = new Date('2026-11-29T21:00:00.000Z');

describe('flotilla tap arguments', () => {
  it('takes filters, a start, follow and a name', () => {
    expect(
      parseCliArgs([
        'tap',
        '--tenant',
        'acme',
        '--conversation',
        'c1',
        '--conversation',
        'c2',
        '--type',
        'action,observation',
        '--source',
        'agent',
        '--start-seq',
        '42',
        '--follow',
        '--name',
        'audit',
      ]).command,
    ).toEqual({
      name: 'tap',
      tenant: 'acme',
      conversations: ['c1', 'c2'],
      types: ['action', 'observation'],
      sources: ['agent'],
      start: { from: 'position', streamSeq: 42 },
      follow: true,
      tapName: 'audit',
      json: false,
    });
    expect(parseCliArgs(['tap']).command).toMatchObject({ start: { from: 'start' }, conversations: [], follow: false });
    expect(parseCliArgs(['tap', '--new']).command).toMatchObject({ start: { from: 'new' } });
    expect(parseCliArgs(['tap', '--since', '2026-11-29T20:00:00Z']).command).toMatchObject({
      start: { from: 'time', since: new Date('2026-11-29T20:00:00Z') },
    });
  });

  it('reads a duration back from now', async () => {
    const { tapCommandOf } = await import('./tap-args.js');
    expect(tapCommandOf([], { since: '10m' }, () => now).start).toEqual({
      from: 'time',
      since: new Date('2026-11-29T20:50:00.000Z'),
    });
  });

  it('refuses what it cannot read, saying why', () => {
    expect(() => parseCliArgs(['tap', '--since', 'yesterday'])).toThrow(/--since must be a time/);
    expect(() => parseCliArgs(['tap', '--since', '1h', '--new'])).toThrow(/one start, not --since and --new/);
    expect(() => parseCliArgs(['tap', '--type', 'nope'])).toThrow(/--type: unknown value "nope"/);
    expect(() => parseCliArgs(['tap', '--start-seq', '0'])).toThrow(/--start-seq must be a stream position/);
    expect(() => parseCliArgs(['tap', '--conversation', 'a.b'])).toThrow(/not a conversation id/);
    expect(() => parseCliArgs(['tap', 'extra'])).toThrow(/tap takes no argument/);
  });
});
