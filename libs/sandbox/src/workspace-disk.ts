import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmod,
  link,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  truncate,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { SandboxError, SandboxErrorCode } from './errors.js';

const run = promisify(execFile);

/**
 * How a workspace's size is held to its quota. `filesystem`: the workspace is a filesystem of its
 * own (an ext4 image on a loop device, as large as the quota), so a write past it fails inside the
 * sandbox at once with ENOSPC. `check`: the tool runner measures the workspace about once a second
 * while a command runs and stops the command past it. `auto`: `filesystem` where the tool runner
 * may mount loop devices, `check` elsewhere.
 */
export const DiskLimit = { Auto: 'auto', Filesystem: 'filesystem', Check: 'check' } as const;
export type DiskLimit = (typeof DiskLimit)[keyof typeof DiskLimit];

/** How one workspace is held to its quota. */
export type WorkspaceDiskKind = 'filesystem' | 'checked';

/** Where workspaces get a filesystem each, and why not where they do not. */
export type DiskSupport =
  { readonly kind: 'filesystem'; readonly disks: WorkspaceDisks } | { readonly kind: 'check'; readonly reason: string };

/** The commands the filesystem limit runs (util-linux and e2fsprogs). */
const COMMANDS = ['flock', 'mkfs.ext4', 'mount', 'umount'];

/** Filesystems made ahead, beside the workspaces (`.disk-spares`), so that a new workspace's is not made on its first write's path. */
const SPARES = 2;
const SPARES_DIR = '.disk-spares';

export type WorkspaceDisksOptions = {
  /** The size of each workspace's filesystem (the quota). */
  readonly bytes: number;
  /** The owner of a new filesystem's root: the sandbox user (root's own where it runs none). */
  readonly owner: { readonly uid: number; readonly gid: number };
  /** The workspaces' root (`<root>/<tenant>/<conversation>`): spares are made ahead beside the workspaces in it. Without it, none. */
  readonly workspaces?: string;
};

/**
 * Each workspace a filesystem of its own, of the quota's size: an ext4 image beside it
 * (`.<name>.ext4`, sparse, mode 0600), made before the first write into the workspace (taken from
 * the spares made ahead, when one is ready) and mounted over it. Mounts are made in the host's
 * mount namespace, where every tool runner of the host and whoever reads the workspace's folder
 * see them; they outlive the runner (the next one finds them mounted), and go when the workspace
 * is deleted or its home's launcher sweeps them (unmountWorkspacesUnder). A workspace that already
 * holds files and no image (made without the limit) stays as it is, checked from outside.
 */
export class WorkspaceDisks {
  /** Workspaces found to hold files of their own (checked). */
  readonly #checked = new Set<string>();
  readonly #pending = new Map<string, Promise<WorkspaceDiskKind | undefined>>();
  /** Spares are made in the background, one at a time, after a workspace's filesystem is made. */
  #refilling: Promise<void> | undefined;
  /** A spare is made for one owner and size (`<uid>-<gid>-<KiB>-<random>.ext4`): a runner of other settings takes none of it. */
  readonly #sparePrefix: string;

  constructor(readonly options: WorkspaceDisksOptions) {
    this.#sparePrefix = `${options.owner.uid}-${options.owner.gid}-${Math.floor(options.bytes / 1024)}-`;
  }

  #isSpare(name: string): boolean {
    return name.startsWith(this.#sparePrefix) && name.endsWith('.ext4');
  }

  /** The image file of `workspace`. */
  static imageOf(workspace: string): string {
    return path.join(path.dirname(workspace), `.${path.basename(workspace)}.ext4`);
  }

  /**
   * How `workspace` (an existing directory) is limited, its filesystem mounted first if it has one;
   * `make`: its filesystem is made first if it has none yet. Undefined: none yet, and none made
   * (a workspace nothing has written to: reading it needs none).
   */
  ensure(workspace: string, make: boolean): Promise<WorkspaceDiskKind | undefined> {
    if (this.#checked.has(workspace)) return Promise.resolve('checked');
    const key = `${make ? 'make' : 'find'}:${workspace}`;
    const pending = this.#pending.get(key);
    if (pending) return pending;
    const task = this.#ensure(workspace, make).finally(() => this.#pending.delete(key));
    this.#pending.set(key, task);
    return task;
  }

  async #ensure(workspace: string, make: boolean): Promise<WorkspaceDiskKind | undefined> {
    // mounted already (by this runner, a sibling, or one before it), or nothing to mount: stats, no process
    if (await isMountPoint(workspace)) return 'filesystem';
    const image = WorkspaceDisks.imageOf(workspace);
    let made = false;
    if (!(await exists(image))) {
      if (!make) return undefined;
      if ((await readdir(workspace)).length > 0) {
        this.#checked.add(workspace);
        return 'checked';
      }
      made = await this.#place(image, workspace);
    }
    // under an exclusive lock of the tenant's folder, which every tool runner of the host takes:
    // `mount -o loop` attaches the image to the loop device that already holds it, if any, and two
    // mounts at once could each attach a device of their own (two filesystems over one file)
    try {
      await run('flock', ['-x', path.dirname(workspace), 'mount', '-o', 'loop,nosuid,nodev,discard', image, workspace]);
    } catch (error) {
      // a sibling (another runner, or this one for another conversation in the same workspace: a
      // sub-agent in its parent's) mounted it between the look above and the lock: it is mounted
      if (await isMountPoint(workspace)) return 'filesystem';
      throw new SandboxError(
        SandboxErrorCode.StartFailed,
        `the workspace's filesystem could not be mounted: ${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}`,
        { cause: error },
      );
    }
    if (made) {
      // a new filesystem's own lost+found is not the agent's (fsck makes it again when it needs one);
      // its root is the workspace, its owner's alone
      await rm(path.join(workspace, 'lost+found'), { recursive: true, force: true });
      await chmod(workspace, 0o700);
    }
    return 'filesystem';
  }

  /**
   * Puts a new filesystem at `image` (a spare, or one made now), unless a sibling runner put one
   * there first (then that one is the workspace's); whether this one was.
   */
  async #place(image: string, workspace: string): Promise<boolean> {
    // spares are on the workspaces' filesystem, for the workspaces of their root (a link cannot cross filesystems)
    const root = this.options.workspaces === undefined ? undefined : path.resolve(this.options.workspaces);
    const spares =
      root !== undefined && path.dirname(path.dirname(path.resolve(workspace))) === root
        ? path.join(root, SPARES_DIR)
        : undefined;
    const ready = (spares && (await this.#takeSpare(spares))) || (await this.#make(path.dirname(image)));
    try {
      // a link never replaces: of two runners making one workspace's filesystem at once, one is kept
      await link(ready, image);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    } finally {
      await rm(ready, { force: true });
      if (spares) this.#refill(spares);
    }
  }

  /** A spare made ahead, claimed by renaming it to a name of this call's (two runners never take one); undefined when none is ready. */
  async #takeSpare(spares: string): Promise<string | undefined> {
    for (const name of (await readdir(spares).catch(() => [])).filter((entry) => this.#isSpare(entry))) {
      const claimed = path.join(spares, `claimed-${randomBytes(8).toString('hex')}`);
      const taken = await rename(path.join(spares, name), claimed).then(
        () => true,
        () => false,
      );
      if (taken) return claimed;
    }
    return undefined;
  }

  /** A new filesystem in `directory`, of the quota's size, its root the owner's: a sparse image, only root's. */
  async #make(directory: string, name = `.made-${randomBytes(8).toString('hex')}.ext4`): Promise<string> {
    const image = path.join(directory, name);
    await writeFile(image, '', { mode: 0o600 });
    try {
      await truncate(image, this.options.bytes);
      const { uid, gid } = this.options.owner;
      await run('mkfs.ext4', [
        '-q',
        '-F',
        '-m',
        '0',
        '-E',
        `root_owner=${uid}:${gid},lazy_itable_init=1,lazy_journal_init=1`,
        image,
      ]);
      return image;
    } catch (error) {
      await rm(image, { force: true });
      throw new SandboxError(
        SandboxErrorCode.StartFailed,
        `the workspace's filesystem could not be made: ${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** Makes spares in the background until `SPARES` are ready (a failure leaves the next workspace to make its own). */
  #refill(spares: string): void {
    if (this.#refilling) return;
    this.#refilling = (async () => {
      await mkdir(spares, { recursive: true, mode: 0o700 });
      while ((await readdir(spares)).filter((entry) => this.#isSpare(entry)).length < SPARES) {
        const made = await this.#make(spares, `.${randomBytes(8).toString('hex')}.ext4`);
        // ready only once whole: a spare is taken by its name
        await rename(made, path.join(spares, `${this.#sparePrefix}${randomBytes(8).toString('hex')}.ext4`));
      }
    })()
      .catch(() => undefined)
      .finally(() => (this.#refilling = undefined));
  }

  /** Unmounts `workspace` and removes its image (the workspace is being deleted, its sandboxes closed). */
  async remove(workspace: string): Promise<void> {
    await Promise.all(
      [this.#pending.get(`make:${workspace}`), this.#pending.get(`find:${workspace}`)].map((task) =>
        task?.catch(() => undefined),
      ),
    );
    this.#checked.delete(workspace);
    if (await isMountPoint(workspace)) await run('umount', [workspace]);
    await rm(WorkspaceDisks.imageOf(workspace), { force: true });
  }

  /** Resolves once the spares being made are (tests, before their folder goes). */
  async settle(): Promise<void> {
    await this.#refilling;
  }
}

/**
 * Unmounts every filesystem mounted below `root` (deepest first), e.g. the workspaces a killed tool
 * runner left mounted; their files stay in their images. Only where no tool runner uses `root`:
 * its launcher, holding the home's lock, before its services start and after they stop.
 */
export async function unmountWorkspacesUnder(root: string): Promise<number> {
  const below = `${path.resolve(root)}/`;
  const mountinfo = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  // the fifth field is the mount point, with spaces and the like as octal escapes
  const points = mountinfo
    .split('\n')
    .map((line) =>
      line.split(' ')[4]?.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))),
    )
    .filter((point): point is string => point !== undefined && point.startsWith(below))
    .sort((a, b) => b.length - a.length);
  for (const point of points) await run('umount', ['--lazy', point]).catch(() => undefined);
  return points.length;
}

/** Whether `directory` is a mount point: its device differs from its parent's. */
async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

async function isMountPoint(directory: string): Promise<boolean> {
  const [own, parent] = await Promise.all([
    stat(directory).catch(() => undefined),
    stat(path.dirname(directory)).catch(() => undefined),
  ]);
  return own !== undefined && parent !== undefined && own.dev !== parent.dev;
}

/**
 * Whether workspaces get a filesystem each here: asked for (`setting`), the tool runner root, and a
 * probe in `scratch` (an image made, mounted, written past its size and removed) succeeds. `filesystem`
 * asked for and impossible throws, saying why; `auto` falls back to the check and says why.
 */
export async function detectWorkspaceDisks(
  setting: DiskLimit,
  scratch: string,
  options: WorkspaceDisksOptions,
): Promise<DiskSupport> {
  if (setting === DiskLimit.Check) return { kind: 'check', reason: 'FLOTILLA_SANDBOX_DISK_LIMIT=check' };
  const reason = await unavailableReason(scratch, options);
  if (reason === undefined) return { kind: 'filesystem', disks: new WorkspaceDisks(options) };
  if (setting === DiskLimit.Filesystem)
    throw new SandboxError(
      SandboxErrorCode.Unavailable,
      `FLOTILLA_SANDBOX_DISK_LIMIT=filesystem, but a workspace cannot be a filesystem of its own here: ${reason}`,
    );
  return { kind: 'check', reason };
}

async function unavailableReason(scratch: string, options: WorkspaceDisksOptions): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'the tool runner is not root (mounting a loop device needs CAP_SYS_ADMIN)';
  for (const command of COMMANDS) {
    const found = await run('sh', ['-c', `command -v ${command}`]).then(
      () => true,
      () => false,
    );
    if (!found) return `\`${command}\` is not installed (util-linux, e2fsprogs)`;
  }
  await mkdir(scratch, { recursive: true });
  const directory = await mkdtemp(path.join(scratch, 'disk-probe-'));
  const workspace = path.join(directory, 'workspace');
  const disks = new WorkspaceDisks({ owner: options.owner, bytes: 8 * 1024 * 1024 });
  try {
    await mkdir(workspace);
    if ((await disks.ensure(workspace, true)) !== 'filesystem') return 'the probe workspace was not mounted';
    // the limit holds: a write past the size fails with ENOSPC
    const written = await writeFile(path.join(workspace, 'over'), Buffer.alloc(16 * 1024 * 1024, 1)).then(
      () => 'succeeded',
      (error: NodeJS.ErrnoException) => error.code ?? error.message,
    );
    return written === 'ENOSPC'
      ? undefined
      : `a write past the probe filesystem’s size ${written === 'succeeded' ? 'succeeded' : `failed with ${written}, not ENOSPC`}`;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await disks.remove(workspace).catch(() => undefined);
    await rm(directory, { recursive: true, force: true });
  }
}
