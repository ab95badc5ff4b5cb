import { execFileSync, spawn, type ChildProcess } from 'node:child_process';

/**
 * A test host of a test's own: a network namespace joined to this machine's by a veth pair, with a
 * server in it. Egress tests send traffic there and nowhere else: nothing leaves the machine.
 */
export type TestHost = {
  /** The host's address, reachable from this machine's namespace (and so through slirp4netns). */
  readonly address: string;
  readonly port: number;
  stop(): void;
};

/** Why no test host can be made here, or undefined when one can (root and iproute2's `ip netns`). */
export function testHostUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'it needs root to make a network namespace';
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'it needs iproute2 (`ip netns`)';
  }
}

const ip = (...args: string[]): void => void execFileSync('ip', args, { stdio: 'ignore' });

/** A /30 in 10.251.0.0/16 (a range no machine here routes) that no other test host holds, from `start` on. */
function freeOctet(start: number): number {
  const used = execFileSync('ip', ['-o', '-4', 'addr', 'show'], { encoding: 'utf8' });
  for (let step = 0; step < 250; step++) {
    const octet = (start + step) % 250;
    if (!used.includes(`10.251.${octet}.`)) return octet;
  }
  throw new Error('no free test host address in 10.251.0.0/16');
}

/**
 * Makes a test host named after `name` (a few letters; unique per test file, with this process's
 * pid) whose server is `serverSource`, a Node.js program that listens on `process.env.HOST` and
 * `process.env.PORT` and prints `listening` once it does.
 */
export async function startTestHost(name: string, serverSource: string, port = 8099): Promise<TestHost> {
  const suffix = `${name.slice(0, 3)}${process.pid % 100_000}`;
  const namespace = `flotilla-host-${suffix}`;
  const hostSide = `h${suffix}`.slice(0, 15);
  const testSide = `t${suffix}`.slice(0, 15);
  const octet = freeOctet(process.pid + [...name].reduce((sum, char) => sum + char.charCodeAt(0), 0));
  const address = `10.251.${octet}.2`;
  const remove = (): void => {
    for (const args of [
      ['netns', 'del', namespace],
      ['link', 'del', hostSide],
    ]) {
      try {
        ip(...args);
      } catch {
        // already gone with the namespace
      }
    }
  };
  remove();
  ip('netns', 'add', namespace);
  ip('link', 'add', hostSide, 'type', 'veth', 'peer', 'name', testSide);
  ip('link', 'set', testSide, 'netns', namespace);
  ip('addr', 'add', `10.251.${octet}.1/30`, 'dev', hostSide);
  ip('link', 'set', hostSide, 'up');
  ip('netns', 'exec', namespace, 'ip', 'addr', 'add', `${address}/30`, 'dev', testSide);
  ip('netns', 'exec', namespace, 'ip', 'link', 'set', testSide, 'up');
  ip('netns', 'exec', namespace, 'ip', 'link', 'set', 'lo', 'up');
  const server: ChildProcess = spawn('ip', ['netns', 'exec', namespace, process.execPath, '-e', serverSource], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, HOST: address, PORT: String(port) },
  });
  const stop = (): void => {
    server.kill('SIGKILL');
    remove();
  };
  try {
    await new Promise<void>((resolve, reject) => {
      server.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve());
      server.once('exit', (code) => reject(new Error(`the test host's server exited (${code})`)));
    });
  } catch (error) {
    stop();
    throw error;
  }
  return { address, port, stop };
}
