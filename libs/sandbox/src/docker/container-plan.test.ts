import { describe, expect, it } from 'vitest';
import { SANDBOX_HOME, SANDBOX_PRIVATE, SANDBOX_WORKSPACE } from '../environment.js';
import { DEFAULT_SANDBOX_SETTINGS } from '../settings.js';
import {
  containerName,
  containerOptions,
  environmentList,
  variableNames,
  type ContainerPlan,
} from './container-plan.js';

const plan: ContainerPlan = {
  name: containerName('acme.conversation-1'),
  image: 'debian:bookworm-slim',
  hostWorkspace: '/var/lib/flotilla/workspaces/acme/conversation-1',
  hostPrivate: '/var/lib/flotilla/conversations/acme/conversation-1',
  uid: 1000,
  gid: 1000,
  limits: { ...DEFAULT_SANDBOX_SETTINGS.limits, cpus: 1.5 },
  networkMode: 'none',
  labels: { 'flotilla.sandbox': '1' },
};

describe('containerName', () => {
  it('is readable, valid for the engine, and unique per id', () => {
    const names = ['acme.one', 'acme/one', 'acme one', '../../etc', 'ÿ'.repeat(300), ''].map((id) => containerName(id));
    for (const name of names) {
      expect(name).toMatch(/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/);
      expect(name.length).toBeLessThanOrEqual(80);
    }
    expect(names[0]).toMatch(/^flotilla-sbx-acme\.one-[0-9a-f]{12}$/);
    expect(new Set(names).size).toBe(names.length);
    expect(containerName('acme.one')).toBe(names[0]);
    expect(containerName('acme.one', 'runner-0')).not.toBe(containerName('acme.one', 'runner-1'));
  });
});

describe('containerOptions', () => {
  const options = containerOptions(plan);
  const host = options.HostConfig!;

  it('confines the container: read-only root, no capabilities, no privilege gain, non-root', () => {
    expect(host.ReadonlyRootfs).toBe(true);
    expect(host.CapDrop).toEqual(['ALL']);
    expect(host.CapAdd).toBeUndefined();
    expect(host.Privileged).toBe(false);
    expect(host.SecurityOpt).toEqual(['no-new-privileges:true']);
    expect(options.User).toBe('1000:1000');
    expect(host.Init).toBe(true);
  });

  it('bind-mounts the host workspace at /workspace and gives it memory-backed /tmp and HOME', () => {
    expect(host.Mounts).toEqual([
      {
        Type: 'bind',
        Source: plan.hostWorkspace,
        Target: SANDBOX_WORKSPACE,
        ReadOnly: false,
        BindOptions: { Propagation: 'rprivate' },
      },
      {
        Type: 'bind',
        Source: plan.hostPrivate,
        Target: SANDBOX_PRIVATE,
        ReadOnly: true,
        BindOptions: { Propagation: 'rprivate' },
      },
    ]);
    expect(host.Binds).toBeUndefined();
    expect(host.Tmpfs?.['/tmp']).toContain(`size=${plan.limits.tmpBytes}`);
    expect(host.Tmpfs?.[SANDBOX_HOME]).toContain('uid=1000,gid=1000');
    expect(options.WorkingDir).toBe(SANDBOX_WORKSPACE);
  });

  it('applies the limits: processes, memory without swap, CPU, CPU seconds and file size', () => {
    expect(host.PidsLimit).toBe(plan.limits.processes);
    expect(host.Memory).toBe(plan.limits.memoryBytes);
    expect(host.MemorySwap).toBe(plan.limits.memoryBytes);
    expect(host.NanoCpus).toBe(1_500_000_000);
    expect(host.Ulimits).toEqual(
      expect.arrayContaining([
        { Name: 'cpu', Soft: plan.limits.cpuSeconds, Hard: plan.limits.cpuSeconds },
        { Name: 'fsize', Soft: plan.limits.fileBytes, Hard: plan.limits.fileBytes },
      ]),
    );
  });

  it('has no network in the mode none, and the egress network otherwise', () => {
    expect(host.NetworkMode).toBe('none');
    expect(containerOptions({ ...plan, networkMode: 'flotilla-sandbox-egress' }).HostConfig?.NetworkMode).toBe(
      'flotilla-sandbox-egress',
    );
  });

  it("keeps a lifeline: the container ends when the service's attached stdin closes, and is removed", () => {
    expect(options.OpenStdin).toBe(true);
    expect(options.StdinOnce).toBe(true);
    expect(host.AutoRemove).toBe(true);
    expect(options.Entrypoint).toEqual(['/bin/sh', '-c', 'exec cat > /dev/null']);
  });

  it('holds no secrets: only the scratch base variables', () => {
    expect(options.Env?.map((line) => line.slice(0, line.indexOf('=')))).toEqual(['PATH', 'HOME', 'LANG', 'TERM']);
  });
});

describe('environment lines', () => {
  it('writes KEY=value lines and leaves out names the engine cannot express', () => {
    expect(environmentList({ A: '1', 'B=C': '2', '': '3', D: 'x=y' })).toEqual(['A=1', 'D=x=y']);
  });

  it("reads the names of an image's ENV", () => {
    expect(variableNames(['PATH=/usr/bin', 'NODE_VERSION=22', 'EMPTY=', 'BARE'])).toEqual([
      'PATH',
      'NODE_VERSION',
      'EMPTY',
      'BARE',
    ]);
    expect(variableNames(undefined)).toEqual([]);
  });
});
