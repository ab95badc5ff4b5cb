// Starts a shell session (in a sandbox of the given kind) running a slow command with a side
// effect in its workspace, says so, then waits to be killed.
import path from 'node:path';
import { createBwrapProvider, DEFAULT_SANDBOX_SETTINGS, openHostSandbox } from '@flotilla/sandbox';
import { BashSession } from '../bash-session.js';

const [directory, kind = 'none'] = process.argv.slice(2);
if (!directory) throw new Error('usage: hold-session <workspace> [none|bwrap]');
const sandbox =
  kind === 'bwrap'
    ? await createBwrapProvider(DEFAULT_SANDBOX_SETTINGS, {
        stateDir: path.join(directory, '..', `${path.basename(directory)}-state`),
        ownedRoot: path.dirname(directory),
      }).open({ id: 'hold', workspace: directory })
    : openHostSandbox({ id: 'hold', workspace: directory });
const session = await BashSession.start({ sandbox, cwd: sandbox.workspacePath, bufferCapacity: 10_000 });
await session.run('sleep 2; echo ran > effect.txt');
process.stdout.write('running\n');
setInterval(() => undefined, 60_000);
