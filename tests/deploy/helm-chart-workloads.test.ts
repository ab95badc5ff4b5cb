// The workloads the Helm chart (helm/flotilla) deploys: the bundled NATS (its config, with the
// permission matrix include, accepted by a real nats-server) or a NATS by URL, the step workers'
// autoscaling, the tool runners' sandboxes, and the network policies around them.
// (Lint, schemas, values, secrets and settings: helm-chart-values.test.ts.)
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { binaryVersion, compareVersions, findNatsServerBinary, MINIMUM_SERVER_VERSION } from '@flotilla/nats-embedded';
import { PARTITIONS } from '@flotilla/bus';
import { CHART, templateChart, type Manifest } from './k8s-tools.js';
import { envOf, find, manifests, pods, renderValueSets, tools, type Workload } from './helm-chart-renders.js';

const run = promisify(execFile);

renderValueSets();

describe('the Helm chart', () => {
  it('depends on the official NATS chart (JetStream, 3 replicas), or on a NATS by URL', () => {
    const nats = find('defaults', 'StatefulSet', 'flotilla-nats') as Workload;
    expect(nats.spec.replicas).toBe(3);
    const config = (
      find('defaults', 'ConfigMap', 'flotilla-nats-config') as Manifest & { data: Record<string, string> }
    ).data['nats.conf']!;
    expect(config).toContain('include ../flotilla-nats/auth.conf;');
    expect(config).toMatch(/"jetstream"/);
    expect(envOf(pods('defaults').get('gateway')!).get('FLOTILLA_NATS_URL')?.value).toBe('nats://flotilla-nats:4222');

    const external = manifests('external NATS');
    expect(external.some((m) => m.kind === 'StatefulSet' && m.metadata.name.includes('nats'))).toBe(false);
    expect(external.some((m) => m.kind === 'Secret')).toBe(false);
    expect(envOf(pods('external NATS').get('step-worker')!).get('FLOTILLA_NATS_URL')?.value).toBe(
      'tls://nats.messaging:4222',
    );
    const policy = find('external NATS', 'NetworkPolicy', 'flotilla-step-worker') as Manifest & {
      spec: { egress: { to?: unknown[] }[] };
    };
    expect(policy.spec.egress).toContainEqual({
      to: [{ ipBlock: { cidr: '10.20.0.0/16' } }],
      ports: [{ protocol: 'TCP', port: 4222 }],
    });
  });

  it('runs the bundled NATS on the server version the suite runs on, with resources, its monitoring port open to the metrics scrapers only', async () => {
    const nats = find('defaults', 'StatefulSet', 'flotilla-nats') as Workload;
    const server = nats.spec.template.spec.containers.find((container) => container.name === 'nats')!;
    // the one pinned tag (values.yaml, nats.container.image.tag): a server at least the minimum every
    // service checks at connect, and the very version this suite's tests run on (2.15.1 today)
    const tag = /^nats:(\d+\.\d+\.\d+)(?:-alpine)?$/.exec(server.image)?.[1];
    expect(tag, server.image).toBeDefined();
    expect(compareVersions(tag!, MINIMUM_SERVER_VERSION)).toBeGreaterThanOrEqual(0);
    const suiteServer = findNatsServerBinary();
    expect(suiteServer, 'the nats-server the suite runs on (./dev fetches it)').toBeDefined();
    expect(tag, `the chart's NATS image against the suite's server ${suiteServer}`).toBe(binaryVersion(suiteServer!));
    // not BestEffort: requests and a memory limit
    expect(server.resources?.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(server.resources?.limits).toMatchObject({ memory: expect.any(String) });

    type Policy = Manifest & { spec: { ingress: { from?: unknown[]; ports: { port: number }[] }[] } };
    const monitoring = (set: string) =>
      (find(set, 'NetworkPolicy', 'flotilla-nats') as Policy).spec.ingress.filter((rule) =>
        rule.ports.some((port) => port.port === 8222),
      );
    const prometheus = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
    };
    const keda = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'keda' } },
      podSelector: { matchLabels: { app: 'keda-operator' } },
    };
    // never from every source: a rule without `from` would be
    expect(monitoring('defaults')).toEqual([{ ports: [{ protocol: 'TCP', port: 8222 }], from: [prometheus] }]);
    // KEDA's scaler reads it only while the step workers scale with KEDA
    expect(monitoring('KEDA on')).toEqual([{ ports: [{ protocol: 'TCP', port: 8222 }], from: [prometheus, keda] }]);
    expect(monitoring('NATS monitoring closed')).toEqual([]);
  });

  it("gives the bundled NATS a config with the permission matrix that nats-server accepts, every user's password from the users Secret", async () => {
    const matrix = JSON.parse(await readFile(join(CHART, 'files', 'nats-values.json'), 'utf8')) as {
      config: { merge: { authorization: { users: { user: string; permissions: unknown }[] } } };
    };
    const users = matrix.config.merge.authorization.users;
    const usersSecret = find('defaults', 'Secret', 'flotilla-nats-users') as Manifest & {
      data: Record<string, string>;
    };
    expect(Object.keys(usersSecret.data).sort()).toEqual(users.map((u) => u.user).sort());
    const auth = find('defaults', 'Secret', 'flotilla-nats-auth') as Manifest & { stringData: Record<string, string> };
    const include = auth.stringData['auth.conf']!;
    const parsed = JSON.parse(include.replace(/^authorization: /, '')) as {
      users: { user: string; password: string; permissions: unknown }[];
    };
    expect(parsed.users.map((u) => u.user)).toEqual(users.map((u) => u.user));
    for (const user of parsed.users) {
      expect(user.password).toBe(Buffer.from(usersSecret.data[user.user]!, 'base64').toString('utf8'));
      expect(user.permissions).toEqual(users.find((u) => u.user === user.user)?.permissions);
    }
    // the server's own check of the config (nats-server -t), as its pod lays it out
    const config = (
      find('defaults', 'ConfigMap', 'flotilla-nats-config') as Manifest & { data: Record<string, string> }
    ).data['nats.conf']!;
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-nats-config-'));
    try {
      await mkdir(join(dir, 'etc', 'nats-config'), { recursive: true });
      await mkdir(join(dir, 'etc', 'flotilla-nats'), { recursive: true });
      const local = config
        .replaceAll('"/data"', JSON.stringify(join(dir, 'data')))
        .replaceAll('/var/run/nats/nats.pid', join(dir, 'nats.pid'));
      await writeFile(join(dir, 'etc', 'nats-config', 'nats.conf'), local);
      await writeFile(join(dir, 'etc', 'flotilla-nats', 'auth.conf'), include);
      const checked = await run('/usr/sbin/nats-server', ['-t', '-c', join(dir, 'etc', 'nats-config', 'nats.conf')], {
        env: { SERVER_NAME: 'flotilla-nats-0' },
      }).then(
        (result) => ({ ok: true, output: result.stdout + result.stderr }),
        (error: { stdout?: string; stderr?: string }) => ({
          ok: false,
          output: `${error.stdout ?? ''}${error.stderr ?? ''}`,
        }),
      );
      expect(checked.output).toMatch(/configuration file .* is valid/i);
      expect(checked.ok).toBe(true);
      // and it can fail: a broken include is refused
      await writeFile(join(dir, 'etc', 'flotilla-nats', 'auth.conf'), include.slice(0, -10));
      await expect(
        run('/usr/sbin/nats-server', ['-t', '-c', join(dir, 'etc', 'nats-config', 'nats.conf')], {
          env: { SERVER_NAME: 'n' },
        }),
      ).rejects.toThrow();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('scales step workers on their durable consumer backlog with KEDA, or with an HPA', () => {
    const scaled = find('KEDA on', 'ScaledObject', 'flotilla-step-worker') as Manifest & {
      spec: { maxReplicaCount: number; triggers: { type: string; metadata: Record<string, string> }[] };
    };
    expect(scaled.spec.maxReplicaCount).toBe(30);
    // a trigger per consumer: the group's own, then each partition's with its share of the threshold
    const metadata = {
      natsServerMonitoringEndpoint: 'flotilla-nats-headless.agents.svc.cluster.local:8222',
      account: '$G',
      stream: 'FLOTILLA_EVENTS',
    };
    expect(scaled.spec.triggers).toEqual([
      { type: 'nats-jetstream', metadata: { ...metadata, consumer: 'step-worker', lagThreshold: '200' } },
      ...Array.from({ length: PARTITIONS }, (_, partition) => ({
        type: 'nats-jetstream',
        metadata: {
          ...metadata,
          consumer: `step-worker-p${partition}`,
          lagThreshold: String(Math.floor(200 / PARTITIONS)),
        },
      })),
    ]);
    // the autoscaler owns the replicas
    expect((find('KEDA on', 'Deployment', 'flotilla-step-worker') as Workload).spec.replicas).toBeUndefined();
    expect((find('defaults', 'Deployment', 'flotilla-step-worker') as Workload).spec.replicas).toBe(2);
    expect(manifests('defaults').some((m) => m.kind === 'ScaledObject' || m.kind === 'HorizontalPodAutoscaler')).toBe(
      false,
    );
    const hpa = find('HPA on', 'HorizontalPodAutoscaler', 'flotilla-step-worker') as Manifest & {
      spec: { scaleTargetRef: { name: string } };
    };
    expect(hpa.spec.scaleTargetRef.name).toBe('flotilla-step-worker');
  });

  it('gives the tool runners a governing headless Service, PDBs and the sandbox kind each needs', () => {
    const runners = find('defaults', 'StatefulSet', 'flotilla-tool-runner') as Manifest & {
      spec: { serviceName: string };
    };
    const headless = find('defaults', 'Service', runners.spec.serviceName) as Manifest & {
      spec: { clusterIP: string };
    };
    expect(headless.spec.clusterIP).toBe('None');
    for (const name of ['gateway', 'step-worker', 'tool-runner'])
      expect(find('defaults', 'PodDisruptionBudget', `flotilla-${name}`)).toBeDefined();

    const bwrap = pods('defaults').get('tool-runner')!.containers[0]!.securityContext!;
    expect(bwrap['seccompProfile']).toEqual({ type: 'Localhost', localhostProfile: 'flotilla/seccomp-bwrap.json' });
    expect(bwrap['appArmorProfile']).toEqual({ type: 'Unconfined' });
    expect(bwrap['procMount']).toBe('Unmasked');
    expect(bwrap['privileged']).toBe(false);
    // before 1.30 AppArmor is the annotation
    const old = find('sandbox bwrap with egress, Kubernetes 1.29', 'StatefulSet', 'flotilla-tool-runner') as Workload;
    expect(old.spec.template.metadata.annotations?.['container.apparmor.security.beta.kubernetes.io/tool-runner']).toBe(
      'unconfined',
    );
    // the profile is installed on every node by default (a stock cluster needs no node setup), not when the operator does it
    expect(find('defaults', 'DaemonSet', 'flotilla-seccomp-installer')).toBeDefined();
    for (const values of ['sandbox bwrap with egress, Kubernetes 1.29', 'sandbox docker', 'sandbox none in gVisor']) {
      expect(
        manifests(values).some((manifest) => manifest.kind === 'DaemonSet'),
        values,
      ).toBe(false);
    }

    const docker = pods('sandbox docker').get('tool-runner')!;
    expect(docker.volumes).toContainEqual({
      name: 'docker-socket',
      hostPath: { path: '/var/run/docker.sock', type: 'Socket' },
    });
    expect(docker.containers[0]!.securityContext!['seccompProfile']).toEqual({ type: 'RuntimeDefault' });
    expect(envOf(docker).get('FLOTILLA_SANDBOX')?.value).toBe('docker');
    const none = pods('sandbox none in gVisor').get('tool-runner')!;
    expect(none.runtimeClassName).toBe('gvisor');
    expect(envOf(none).get('FLOTILLA_SANDBOX')?.value).toBe('none');
  });

  it('keeps sandboxes off the cluster and the metadata endpoint, and lets the gateway be reached', () => {
    type Policy = Manifest & {
      spec: {
        ingress: { from?: unknown[]; ports: unknown[] }[];
        egress: { to?: { ipBlock?: { cidr: string; except?: string[] } }[]; ports?: unknown[] }[];
      };
    };
    const closed = find('defaults', 'NetworkPolicy', 'flotilla-tool-runner') as Policy;
    expect(closed.spec.egress.some((rule) => rule.to?.some((peer) => peer.ipBlock !== undefined))).toBe(false);
    const open = find('sandbox bwrap with egress, Kubernetes 1.29', 'NetworkPolicy', 'flotilla-tool-runner') as Policy;
    const outside = open.spec.egress.flatMap((rule) => rule.to ?? []).find((peer) => peer.ipBlock !== undefined);
    expect(outside?.ipBlock?.cidr).toBe('0.0.0.0/0');
    expect(outside?.ipBlock?.except).toEqual(expect.arrayContaining(['169.254.0.0/16', '10.0.0.0/8']));
    // no ipBlock egress for the projector, the delegator or the gateway: NATS and DNS only
    for (const service of ['gateway', 'projector', 'delegator']) {
      const policy = find('defaults', 'NetworkPolicy', `flotilla-${service}`) as Policy;
      expect(policy.spec.egress).toHaveLength(2);
    }
    // the webhooks service reaches its receivers outside the cluster, never the cluster's ranges or the metadata endpoint
    const webhooks = find('defaults', 'NetworkPolicy', 'flotilla-webhooks') as Policy;
    const receivers = webhooks.spec.egress.flatMap((rule) => rule.to ?? []).find((peer) => peer.ipBlock !== undefined);
    expect(receivers?.ipBlock).toEqual({
      cidr: '0.0.0.0/0',
      except: expect.arrayContaining(['169.254.0.0/16', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16']),
    });
    const gateway = find('catalog, ServiceMonitor, scheduling', 'NetworkPolicy', 'flotilla-gateway') as Policy;
    expect(gateway.spec.ingress[0]?.from).toContainEqual({
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress' } },
    });
  });

  it("lets the step workers and the condenser reach the model servers on the configured ports and their base URLs' ports, anywhere", () => {
    type Policy = Manifest & { spec: { egress: { to?: unknown[]; ports?: { protocol: string; port: number }[] }[] } };
    const modelRules = (set: string, service: string) => {
      const egress = (find(set, 'NetworkPolicy', `flotilla-${service}`) as Policy).spec.egress;
      // past DNS and NATS
      return egress.slice(2);
    };
    const tcp = (...ports: number[]) => ports.map((port) => ({ protocol: 'TCP', port }));
    for (const service of ['step-worker', 'condenser']) {
      // HTTPS to any address by default (no `to`: the providers, or a server inside the cluster)
      expect(modelRules('defaults', service), service).toEqual([{ ports: tcp(443) }]);
      // an in-cluster vLLM on 8000 (agent.llm.baseURL), a profile's gateway on 8443, a plain http: URL (80), the listed ports; then modelEgress
      expect(modelRules('in-cluster model server', service), service).toEqual([
        { ports: tcp(443, 9000, 8000, 8443, 80) },
        { to: [{ ipBlock: { cidr: '10.9.0.1/32' } }], ports: tcp(3128) },
      ]);
    }
    // the services that never call a model get none of it
    for (const service of ['gateway', 'projector', 'delegator'])
      expect(modelRules('in-cluster model server', service), service).toEqual([]);
    const toolRunner = (find('in-cluster model server', 'NetworkPolicy', 'flotilla-tool-runner') as Policy).spec.egress;
    expect(toolRunner.flatMap((rule) => rule.ports ?? []).some((port) => port.port === 8000)).toBe(false);
  });

  it('refuses a model port that is not a TCP port number', async () => {
    const refused = await templateChart(tools, { networkPolicy: { modelPorts: [70_000] } });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/\/networkPolicy\/modelPorts\/0/);
  });
});
