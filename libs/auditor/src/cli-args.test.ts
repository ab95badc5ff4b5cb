import { describe, expect, it } from 'vitest';
import { parseCliArgs } from './cli-args.js';
import { AuditorError } from './errors.js';

describe('parseCliArgs', () => {
  it('parses the options, with defaults', () => {
    expect(parseCliArgs(['--nats', 'nats://127.0.0.1:4222'])).toEqual({
      help: false,
      servers: ['nats://127.0.0.1:4222'],
      streamName: 'FLOTILLA_EVENTS',
      subjectPrefix: 'flotilla.ev',
      json: false,
    });
    expect(
      parseCliArgs(['--stream', 'EV', '--prefix', 'a.b', '--tenant', 'acme', '--conversation', 'c1', '--json'], {
        NATS_URL: 'localhost:4222,nats://h2:4222',
      }),
    ).toEqual({
      help: false,
      servers: ['localhost:4222', 'nats://h2:4222'],
      streamName: 'EV',
      subjectPrefix: 'a.b',
      tenant: 'acme',
      conversation: 'c1',
      json: true,
    });
    expect(parseCliArgs(['-h'])).toEqual({ help: true });
  });

  it.each([
    [[], /no NATS server: pass --nats/],
    [['--nats'], /argument missing|--nats/],
    [['--nats', 'http://x:80'], /not a NATS URL/],
    [['--nats', 'nats://x', '--bogus'], /Unknown option '--bogus'/],
    [['--nats', 'nats://x', 'extra'], /positional/],
    [['--nats', 'nats://x', '--stream', 'A.B'], /--stream/],
    [['--nats', 'nats://x', '--prefix', 'a.*'], /--prefix/],
    [['--nats', 'nats://x', '--tenant', 'a.b'], /--tenant/],
    [['--nats', 'nats://x', '--conversation', 'c1'], /needs --tenant/],
    [['--nats', 'nats://x', '--tenant', 't', '--conversation', 'x y'], /--conversation/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseCliArgs(argv)).toThrow(AuditorError);
    expect(() => parseCliArgs(argv)).toThrow(message);
  });
});
