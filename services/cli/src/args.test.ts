import { describe, expect, it } from 'vitest';
import { parseCliArgs } from './args.js';
import { CliError } from './errors.js';

const command = (...argv: string[]) => parseCliArgs(argv).command;

function usageMessage(...argv: string[]): string {
  try {
    parseCliArgs(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).code).toBe('usage');
    return (error as CliError).message;
  }
  throw new Error(`parsed: ${argv.join(' ')}`);
}

describe('parseCliArgs', () => {
  it('parses create with repeated tags, a message, --run and --watch', () => {
    expect(
      command(
        'create',
        '--id',
        'c1',
        '--title',
        'Fix CI',
        '--tag',
        'ci',
        '--tag',
        'urgent',
        '--message',
        'go',
        '--run',
        '--watch',
      ),
    ).toEqual({
      name: 'create',
      id: 'c1',
      title: 'Fix CI',
      tags: ['ci', 'urgent'],
      message: 'go',
      run: true,
      watch: { follow: false, verbose: false },
    });
    expect(command('create')).toEqual({ name: 'create', tags: [], run: false });
  });

  it('takes the connection flags anywhere on the line', () => {
    expect(parseCliArgs(['--url', 'http://gw:8080', 'list', '--api-key', 'k'])).toEqual({
      command: { name: 'list', limit: 50, json: false },
      connection: { url: 'http://gw:8080', apiKey: 'k' },
    });
  });

  it('parses send, joining the words of an unquoted text', () => {
    expect(command('send', 'c1', 'fix', 'the', 'test', '--run')).toEqual({
      name: 'send',
      id: 'c1',
      text: 'fix the test',
      images: [],
      run: true,
    });
    expect(command('send', 'c1', '--', '--not-an-option')).toEqual({
      name: 'send',
      id: 'c1',
      text: '--not-an-option',
      images: [],
      run: false,
    });
    // images, repeatable; the text may be left out with them
    expect(command('send', 'c1', 'look', '--image', 'a.png', '--image', 'b.jpg')).toEqual({
      name: 'send',
      id: 'c1',
      text: 'look',
      images: ['a.png', 'b.jpg'],
      run: false,
    });
    expect(command('send', 'c1', '--image', 'a.png')).toEqual({
      name: 'send',
      id: 'c1',
      text: '',
      images: ['a.png'],
      run: false,
    });
    // what the message does to a run in progress: one of the four, named in the refusal
    expect(command('send', 'c1', 'stop', '--on-busy', 'interrupt')).toEqual({
      name: 'send',
      id: 'c1',
      text: 'stop',
      images: [],
      run: false,
      onBusy: 'interrupt',
    });
    expect(() => command('send', 'c1', 'stop', '--on-busy', 'now')).toThrow(
      '--on-busy must be one of enqueue, reject, interrupt, rollback',
    );
  });

  it('parses watch and tail with --after-seq and --follow', () => {
    expect(command('watch', 'c1')).toEqual({ name: 'watch', id: 'c1', afterSeq: 0, follow: false, verbose: false });
    expect(command('watch', 'c1', '--after-seq', '12', '--follow', '--verbose')).toEqual({
      name: 'watch',
      id: 'c1',
      afterSeq: 12,
      follow: true,
      verbose: true,
    });
    expect(command('tail', 'c1', '--after-seq=3', '--follow')).toEqual({
      name: 'tail',
      id: 'c1',
      afterSeq: 3,
      follow: true,
    });
  });

  it('parses the control commands', () => {
    expect(command('approve', 'c1')).toEqual({ name: 'approve', id: 'c1' });
    expect(command('reject', 'c1', '--reason', 'too risky')).toEqual({ name: 'reject', id: 'c1', reason: 'too risky' });
    expect(command('pause', 'c1')).toEqual({ name: 'pause', id: 'c1' });
    expect(command('interrupt', 'c1', '--reason', 'stop')).toEqual({ name: 'interrupt', id: 'c1', reason: 'stop' });
    expect(command('run', 'c1', '--watch', '--follow')).toEqual({
      name: 'run',
      id: 'c1',
      watch: { follow: true, verbose: false },
    });
  });

  it('parses list, get, events, info and keys create', () => {
    expect(command('list', '--status', 'finished', '--limit', '500', '--json')).toEqual({
      name: 'list',
      status: 'finished',
      limit: 500,
      json: true,
    });
    expect(command('get', 'c1', '--json')).toEqual({ name: 'get', id: 'c1', json: true });
    expect(command('events', 'c1', '--type', 'action,observation', '--text', 'npm', '--limit', '5')).toEqual({
      name: 'events',
      id: 'c1',
      types: ['action', 'observation'],
      text: 'npm',
      limit: 5,
      json: false,
    });
    expect(command('info')).toEqual({ name: 'info', json: false });
    expect(command('keys', 'create', '--tenant', 'acme', '--name', 'ci')).toEqual({
      name: 'keys-create',
      tenant: 'acme',
      keyName: 'ci',
      json: false,
    });
  });

  it('answers --help and help before anything else', () => {
    expect(command('--help')).toEqual({ name: 'help' });
    expect(command('watch', '-h')).toEqual({ name: 'help', topic: 'watch' });
    expect(command('help')).toEqual({ name: 'help' });
    expect(command('help', 'list')).toEqual({ name: 'help', topic: 'list' });
    expect(command('list', '--version')).toEqual({ name: 'version' });
  });

  it('rejects what is wrong with a message that says what to do', () => {
    expect(usageMessage()).toBe('no command given');
    expect(usageMessage('launch')).toBe('unknown command "launch"');
    expect(usageMessage('list', '--colour')).toContain("Unknown option '--colour'");
    expect(usageMessage('list', '--run')).toBe('list does not take --run');
    expect(usageMessage('watch')).toContain('watch needs the conversation ID');
    expect(usageMessage('watch', 'a', 'b')).toBe('watch: unexpected argument "b"');
    expect(usageMessage('watch', 'no.dots')).toContain('is not a conversation id');
    expect(usageMessage('send', 'c1')).toContain('send needs ID and TEXT');
    expect(usageMessage('reject', 'c1')).toContain('reject needs --reason');
    expect(usageMessage('create', '--run')).toContain('create --run needs --message');
    expect(usageMessage('list', '--status', 'done')).toContain('--status must be one of idle, running');
    expect(usageMessage('list', '--limit', '0')).toContain('--limit must be a whole number from 1');
    expect(usageMessage('tail', 'c1', '--after-seq', '-1')).toContain('--after-seq');
    expect(usageMessage('events', 'c1', '--type', 'action,acton')).toContain('unknown event type "acton"');
    expect(usageMessage('keys', 'delete')).toContain('keys create');
    expect(usageMessage('keys', 'create', '--tenant', 'a.b', '--name', 'x')).toContain('--tenant');
    expect(usageMessage('send', 'c1', 'hi', '--follow')).toContain('--follow and --verbose go with --watch');
  });
});
