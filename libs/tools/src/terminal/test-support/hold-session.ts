// Starts a shell session running a slow command with a side effect, says so, then waits to be killed.
import { BashSession } from '../bash-session.js';

const [directory] = process.argv.slice(2);
if (!directory) throw new Error('usage: hold-session <directory>');
const session = await BashSession.start({ cwd: directory, env: process.env, bufferCapacity: 10_000 });
await session.run('sleep 2; echo ran > effect.txt');
process.stdout.write('running\n');
setInterval(() => undefined, 60_000);
