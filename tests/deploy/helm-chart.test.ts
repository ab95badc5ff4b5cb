// The Helm chart (helm/flotilla) rendered as users install it: lint, templates over several value
// sets, every manifest against the Kubernetes schemas (kubernetes-models, KEDA's and the
// Prometheus Operator's), invalid values refused by values.schema.json, secrets only where they
// are used, and the bundled NATS's config (with the permission matrix include) accepted by a real
// nats-server.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { binaryVersion, compareVersions, findNatsServerBinary, MINIMUM_SERVER_VERSION } from '@flotilla/nats-embedded';
import { PARTITIONS } from '@flotilla/bus';
import {
  CHART,
  helm,
  renderChart,
  templateChart,
  unpackKubeTools,
  type KubeTools,
  type Manifest,
} from './k8s-tools.js';

const run = promisify(execFile);

/** The value sets the chart is rendered with (names for the test titles). */
const VALUE_SETS: Record<string, Record<string, unknown>> = {
  defaults: {},
  'external NATS': {
    nats: { enabled: false },
    bus: { url: 'tls://nats.messaging:4222', replicas: 3, auth: { secretName: 'our-nats-users', create: false } },
    networkPolicy: { externalNatsTo: [{ ipBlock: { cidr: '10.20.0.0/16' } }] },
  },
  'KEDA on': { services: { stepWorker: { autoscaling: { keda: { enabled: true, maxReplicas: 30 } } } } },
  'NATS monitoring closed': { networkPolicy: { natsMonitoringFrom: [] } },
  'HPA on': { services: { stepWorker: { autoscaling: { hpa: { enabled: true } } } } },
  'sandbox bwrap with egress, Kubernetes 1.29': {
    services: { toolRunner: { sandbox: { network: 'egress', installSeccompProfile: { enabled: false } } } },
  },
  'sandbox docker': {
    services: {
      toolRunner: {
        sandbox: {
          kind: 'docker',
          docker: { socketHostPath: '/var/run/docker.sock', workspacesHostPath: '/var/lib/flotilla/workspaces' },
        },
      },
    },
  },
  'sandbox none in gVisor': { services: { toolRunner: { sandbox: { kind: 'none' }, runtimeClassName: 'gvisor' } } },
  'catalog, ServiceMonitor, scheduling': {
    agentCatalog: {
      profiles: { big: { provider: 'anthropic', model: 'claude-sonnet-4-5', apiKeyEnv: 'ANTHROPIC_API_KEY' } },
      templates: { reviewer: { llm: { profile: 'big' } } },
    },
    modelKeys: [
      { env: 'OPENAI_API_KEY', secretName: 'flotilla-llm', key: 'api-key' },
      { env: 'ANTHROPIC_API_KEY', secretName: 'flotilla-llm', key: 'anthropic' },
    ],
    serviceMonitor: { enabled: true },
    image: {
      registry: 'registry.example.com',
      repository: 'flotilla',
      tag: '',
      digest: `sha256:${'a'.repeat(64)}`,
      pullPolicy: 'Always',
      pullSecrets: ['regcred'],
    },
    podDefaults: {
      topologySpreadConstraints: [
        { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' },
      ],
      tolerations: [{ key: 'agents', operator: 'Exists', effect: 'NoSchedule' }],
    },
    services: {
      gateway: {
        podAnnotations: { team: 'agents' },
        extraEnv: [{ name: 'FLOTILLA_LOG_LEVEL', value: 'debug' }],
        envFrom: [{ configMapRef: { name: 'extra' } }],
      },
    },
    networkPolicy: {
      gatewayIngressFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress' } } }],
    },
  },
};
VALUE_SETS['in-cluster model server'] = {
  agent: {
    llm: { provider: 'openai-chat', model: 'qwen3-32b', baseURL: 'http://vllm.models.svc.cluster.local:8000/v1' },
  },
  agentCatalog: {
    profiles: {
      own: {
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        apiKeyEnv: 'ANTHROPIC_API_KEY',
        baseURL: 'https://llm-gateway.example.com:8443/anthropic',
      },
      plain: { provider: 'openai-chat', model: 'm', baseURL: 'http://ollama.models' },
    },
  },
  networkPolicy: {
    modelPorts: [443, 9000],
    modelEgress: [{ to: [{ ipBlock: { cidr: '10.9.0.1/32' } }], ports: [{ protocol: 'TCP', port: 3128 }] }],
  },
};
const KUBE_VERSION: Record<string, string> = { 'sandbox bwrap with egress, Kubernetes 1.29': '1.29.0' };

let tools: KubeTools;
const rendered = new Map<string, readonly Manifest[]>();

beforeAll(async () => {
  tools = await unpackKubeTools();
  for (const [name, values] of Object.entries(VALUE_SETS))
    rendered.set(name, await renderChart(tools, values, ['--kube-version', KUBE_VERSION[name] ?? '1.33.0']));
}, 120_000);
afterAll(async () => {
  await tools?.dispose();
});

function manifests(set: string): readonly Manifest[] {
  const found = rendered.get(set);
  if (found === undefined) throw new Error(`no render for ${set}`);
  return found;
}
function find(set: string, kind: string, name: string): Manifest {
  const found = manifests(set).find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
  if (found === undefined)
    throw new Error(
      `${set}: no ${kind} ${name} among ${manifests(set)
        .map((m) => `${m.kind}/${m.metadata.name}`)
        .join(', ')}`,
    );
  return found;
}

type EnvVar = {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
};
type Container = {
  name: string;
  image: string;
  env?: EnvVar[];
  envFrom?: unknown[];
  volumeMounts?: { name: string; mountPath: string }[];
  securityContext?: Record<string, unknown>;
  startupProbe?: unknown;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  livenessProbe?: unknown;
  readinessProbe?: unknown;
};
type PodSpec = {
  containers: Container[];
  volumes?: {
    name: string;
    secret?: { secretName: string };
    configMap?: { name: string };
    hostPath?: { path: string };
  }[];
  automountServiceAccountToken?: boolean;
  securityContext?: Record<string, unknown>;
  topologySpreadConstraints?: { labelSelector?: unknown }[];
  imagePullSecrets?: { name: string }[];
  runtimeClassName?: string;
};
type Workload = Manifest & {
  spec: {
    replicas?: number;
    template: { metadata: { annotations?: Record<string, string>; labels?: Record<string, string> }; spec: PodSpec };
  };
};

/** Every pod template of a render, by the pod's app.kubernetes.io/name. */
function pods(set: string): Map<string, PodSpec> {
  const found = new Map<string, PodSpec>();
  for (const manifest of manifests(set)) {
    if (['Deployment', 'StatefulSet', 'DaemonSet'].includes(manifest.kind)) {
      const workload = manifest as Workload;
      found.set(
        workload.spec.template.metadata.labels?.['app.kubernetes.io/name'] ?? manifest.metadata.name,
        workload.spec.template.spec,
      );
    } else if (manifest.kind === 'Pod') {
      found.set(manifest.metadata.name, (manifest as unknown as { spec: PodSpec }).spec);
    }
  }
  return found;
}
/** The Secret keys a pod reads, as "secret/key" (env) and "secret" (volumes, envFrom). */
function secretsOf(pod: PodSpec): Set<string> {
  const used = new Set<string>();
  for (const container of pod.containers) {
    for (const variable of container.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef;
      if (ref !== undefined) used.add(`${ref.name}/${ref.key}`);
    }
  }
  for (const volume of pod.volumes ?? []) if (volume.secret !== undefined) used.add(volume.secret.secretName);
  return used;
}
function envOf(pod: PodSpec): Map<string, EnvVar> {
  return new Map((pod.containers[0]?.env ?? []).map((variable) => [variable.name, variable]));
}

/** A manifest checked against the schema of its kind: the Kubernetes API's, KEDA's or the Prometheus Operator's. */
async function validateManifest(manifest: Manifest): Promise<void> {
  const [group, version] = manifest.apiVersion.includes('/')
    ? manifest.apiVersion.split('/')
    : ['', manifest.apiVersion];
  const specifier =
    group === 'keda.sh'
      ? `@kubernetes-models/keda/keda.sh/${version}/${manifest.kind}`
      : group === 'monitoring.coreos.com'
        ? `@kubernetes-models/prometheus-operator/monitoring.coreos.com/${version}/${manifest.kind}`
        : `kubernetes-models/${group === '' ? '' : `${group}/`}${version}/${manifest.kind}`;
  const module = (await import(specifier)) as Record<string, new (data: unknown) => { validate(): void }>;
  const Model = module[manifest.kind];
  if (Model === undefined) throw new Error(`${specifier} exports no ${manifest.kind}`);
  new Model(manifest).validate();
}

describe('the Helm chart', () => {
  it('passes helm lint with the defaults and with each value set', async () => {
    const lint = await helm(tools, ['lint', CHART, '--strict']);
    expect(lint.stderr + lint.stdout).toContain('0 chart(s) failed');
    expect(lint.code).toBe(0);
    for (const [name, values] of Object.entries(VALUE_SETS)) {
      const file = join(tools.dir, `lint-${name.replace(/\W+/g, '-')}.json`);
      await writeFile(file, JSON.stringify(values));
      const result = await helm(tools, ['lint', CHART, '-f', file]);
      expect(result.code, `${name}: ${result.stdout}${result.stderr}`).toBe(0);
    }
  }, 120_000);

  it.each(Object.keys(VALUE_SETS))(
    'renders manifests that validate against the Kubernetes schemas: %s',
    async (set) => {
      const all = manifests(set);
      expect(all.length).toBeGreaterThan(10);
      for (const manifest of all) {
        await expect(validateManifest(manifest), `${manifest.kind}/${manifest.metadata.name}`).resolves.toBeUndefined();
      }
      // every workload has probes, a restrictive securityContext and no service-account token
      for (const [name, pod] of pods(set)) {
        if (name === 'nats' || name === 'flotilla-test-conversation' || name === 'seccomp-installer') continue;
        expect(pod.automountServiceAccountToken, name).toBe(false);
        const container = pod.containers[0]!;
        expect(container.startupProbe, name).toBeDefined();
        expect(container.livenessProbe, name).toBeDefined();
        expect(container.readinessProbe, name).toBeDefined();
        expect(container.securityContext?.['allowPrivilegeEscalation'], name).toBe(false);
        expect(container.securityContext?.['capabilities'], name).toEqual({ drop: ['ALL'] });
        expect(pod.securityContext?.['runAsNonRoot'], name).toBe(true);
      }
    },
  );

  it('a schema check can fail: a manifest with a wrong type is refused', async () => {
    const deployment = structuredClone(find('defaults', 'Deployment', 'flotilla-gateway')) as unknown as Workload;
    (deployment.spec as unknown as Record<string, unknown>)['replicas'] = 'two';
    await expect(validateManifest(deployment)).rejects.toThrow(/replicas/);
  });

  it('refuses invalid values through values.schema.json, naming the field', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ services: { gateway: { replicas: 'two' } } }, /\/services\/gateway\/replicas.*want integer/],
      [
        { services: { toolRunner: { sandbox: { kind: 'chroot' } } } },
        /\/services\/toolRunner\/sandbox\/kind.*one of 'bwrap', 'docker', 'none'/,
      ],
      [{ services: { stepWorker: { replica: 3 } } }, /\/services\/stepWorker.*'replica' not allowed/],
      [{ bus: { url: 'http://nats:4222' } }, /\/bus\/url/],
      [{ modelKeys: [{ env: 'OPENAI API KEY', secretName: 'x', key: 'y' }] }, /\/modelKeys\/0\/env/],
      [{ image: { pullPolicy: 'Sometimes' } }, /\/image\/pullPolicy/],
    ];
    for (const [values, message] of cases) {
      const result = await templateChart(tools, values);
      expect(result.code, JSON.stringify(values)).not.toBe(0);
      expect(result.stderr).toContain("values don't meet the specifications of the schema");
      expect(result.stderr).toMatch(message);
    }
  }, 60_000);

  it('refuses settings that do not go together, saying which', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ nats: { enabled: false } }, /bus\.url is required with nats\.enabled=false/],
      [{ bus: { auth: { create: false } } }, /bundled NATS .* bus\.auth\.create=true/],
      [
        { services: { stepWorker: { autoscaling: { keda: { enabled: true }, hpa: { enabled: true } } } } },
        /enable keda or hpa, not both/,
      ],
      [
        {
          nats: { enabled: false },
          bus: { url: 'nats://nats:4222' },
          services: { stepWorker: { autoscaling: { keda: { enabled: true } } } },
        },
        /natsServerMonitoringEndpoint is required with an external NATS/,
      ],
    ];
    for (const [values, message] of cases) {
      const result = await templateChart(tools, values);
      expect(result.code, JSON.stringify(values)).not.toBe(0);
      expect(result.stderr).toMatch(message);
    }
  }, 60_000);

  it('gives each secret only to the pods that use it, each reference required', () => {
    for (const set of Object.keys(VALUE_SETS)) {
      const all = pods(set);
      const users = (name: string): Set<string> => secretsOf(all.get(name) ?? { containers: [] });
      const natsSecret = set === 'external NATS' ? 'our-nats-users' : 'flotilla-nats-users';
      for (const service of [
        'gateway',
        'step-worker',
        'tool-runner',
        'condenser',
        'projector',
        'delegator',
        'webhooks',
      ]) {
        const used = users(service);
        // its own NATS password and no other user's
        expect(
          [...used].filter((key) => key.startsWith(`${natsSecret}/`)),
          `${set}: ${service}`,
        ).toEqual([`${natsSecret}/${service}`]);
        // the secrets key: gateway, tool runner, step worker, condenser, webhooks; never the projector or the delegator
        expect(used.has('flotilla-secrets/secrets-key'), `${set}: ${service} secrets key`).toBe(
          service !== 'projector' && service !== 'delegator',
        );
        // the model key only where the model is called
        expect(used.has('flotilla-llm/api-key'), `${set}: ${service} model key`).toBe(
          service === 'step-worker' || service === 'condenser',
        );
        // the gateway's keys only in the gateway
        expect(
          [...used].some((key) => key.startsWith('flotilla-gateway/')),
          `${set}: ${service} gateway keys`,
        ).toBe(service === 'gateway');
        // the NATS server's authorization include only in the NATS pods
        expect(used.has('flotilla-nats-auth'), `${set}: ${service}`).toBe(false);
        for (const variable of all.get(service)?.containers[0]?.env ?? [])
          expect(variable.valueFrom?.secretKeyRef?.optional, `${set}: ${service} ${variable.name}`).toBeUndefined();
      }
      if (set !== 'external NATS') expect(users('nats')).toEqual(new Set(['flotilla-nats-auth']));
    }
    const catalog = pods('catalog, ServiceMonitor, scheduling');
    for (const service of ['step-worker', 'condenser'])
      expect(secretsOf(catalog.get(service)!).has('flotilla-llm/anthropic')).toBe(true);
    for (const service of ['gateway', 'tool-runner', 'projector'])
      expect(secretsOf(catalog.get(service)!).has('flotilla-llm/anthropic')).toBe(false);
  });

  it('gives the agent settings and the catalog to the gateway, step workers and condenser, and rolls them on a change', async () => {
    const plain = pods('defaults');
    const withCatalog = pods('catalog, ServiceMonitor, scheduling');
    for (const service of ['gateway', 'step-worker', 'condenser']) {
      expect(envOf(plain.get(service)!).get('FLOTILLA_AGENT_FILE')?.value).toBe('/etc/flotilla/agent.json');
      expect(envOf(plain.get(service)!).has('FLOTILLA_AGENT_CATALOG_FILE')).toBe(false);
      expect(envOf(withCatalog.get(service)!).get('FLOTILLA_AGENT_CATALOG_FILE')?.value).toBe(
        '/etc/flotilla/catalog.json',
      );
    }
    for (const service of ['tool-runner', 'projector', 'delegator', 'webhooks']) {
      expect(envOf(withCatalog.get(service)!).has('FLOTILLA_AGENT_FILE')).toBe(false);
      expect(envOf(withCatalog.get(service)!).has('FLOTILLA_AGENT_CATALOG_FILE')).toBe(false);
    }
    const configMap = find('catalog, ServiceMonitor, scheduling', 'ConfigMap', 'flotilla-agent') as Manifest & {
      data: Record<string, string>;
    };
    expect(JSON.parse(configMap.data['catalog.json']!)).toEqual(
      VALUE_SETS['catalog, ServiceMonitor, scheduling']!['agentCatalog'],
    );
    const checksum = (set: readonly Manifest[]) =>
      (set.find((m) => m.kind === 'Deployment' && m.metadata.name === 'flotilla-step-worker') as Workload).spec.template
        .metadata.annotations?.['checksum/agent'];
    const changed = await renderChart(tools, {
      agent: { llm: { provider: 'openai-chat', model: 'gpt-4.1' }, tools: ['terminal', 'finish'] },
    });
    expect(checksum(manifests('defaults'))).toMatch(/^[a-f0-9]{64}$/);
    expect(checksum(changed)).not.toBe(checksum(manifests('defaults')));
  });

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

  it('runs the webhooks service with its settings, refusing private networks unless listed, and not at all without a secrets key', async () => {
    const env = envOf(pods('defaults').get('webhooks')!);
    expect(env.get('FLOTILLA_WEBHOOK_ALLOWED_NETWORKS')?.value).toBe('');
    expect(env.get('FLOTILLA_WEBHOOK_MAX_ATTEMPTS')?.value).toBe('12');
    expect(env.get('FLOTILLA_WEBHOOK_DEAD_LETTER_MAX_AGE_MS')?.value).toBe('2592000000');
    const listed = await renderChart(tools, {
      services: { webhooks: { allowedNetworks: ['10.20.0.0/16', '127.0.0.1'] } },
    });
    const deployment = listed.find(
      (manifest) => manifest.kind === 'Deployment' && manifest.metadata.name === 'flotilla-webhooks',
    ) as Workload;
    expect(envOf(deployment.spec.template.spec).get('FLOTILLA_WEBHOOK_ALLOWED_NETWORKS')?.value).toBe(
      '10.20.0.0/16,127.0.0.1',
    );
    const withoutKey = await renderChart(tools, { secretsKey: { secretName: '' } });
    expect(
      withoutKey.some((manifest) => manifest.metadata.name === 'flotilla-webhooks' && manifest.kind === 'Deployment'),
    ).toBe(false);
    const refused = await templateChart(tools, { services: { webhooks: { allowedNetworks: ['intranet'] } } });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/\/services\/webhooks\/allowedNetworks\/0/);
  });

  it("passes retention, tenants' budgets and fair scheduling to the services that read them, refusing a malformed retention", async () => {
    const gateway = envOf(pods('defaults').get('gateway')!);
    expect(gateway.has('FLOTILLA_RETENTION')).toBe(false);
    expect(gateway.get('FLOTILLA_RETENTION_SWEEP_MS')?.value).toBe('60000');
    expect(gateway.has('FLOTILLA_TENANT_BUDGETS')).toBe(false);
    expect(envOf(pods('defaults').get('step-worker')!).get('FLOTILLA_LOOKAHEAD')?.value).toBe('10000');
    const budgets = { default: { day: { usd: 20 } }, tenants: { acme: { month: { usd: 2000 } } } };
    const set = await renderChart(tools, {
      services: { gateway: { retention: 'acme=604800,*=7776000' }, stepWorker: { fairReserve: 20 } },
      tenantBudgets: budgets,
    });
    const pod = (name: string) =>
      (
        set.find(
          (manifest) => manifest.kind === 'Deployment' && manifest.metadata.name === `flotilla-${name}`,
        ) as Workload
      ).spec.template.spec;
    expect(envOf(pod('gateway')).get('FLOTILLA_RETENTION')?.value).toBe('acme=604800,*=7776000');
    for (const name of ['gateway', 'step-worker'])
      expect(JSON.parse(envOf(pod(name)).get('FLOTILLA_TENANT_BUDGETS')!.value!)).toEqual(budgets);
    expect(envOf(pod('step-worker')).get('FLOTILLA_FAIR_RESERVE')?.value).toBe('20');
    const refused = await templateChart(tools, { services: { gateway: { retention: 'acme=a week' } } });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/\/services\/gateway\/retention/);
  });

  it('takes the image, scheduling and extra settings from values', () => {
    const all = pods('catalog, ServiceMonitor, scheduling');
    const gateway = all.get('gateway')!;
    expect(gateway.containers[0]!.image).toBe(`registry.example.com/flotilla@sha256:${'a'.repeat(64)}`);
    expect(gateway.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    expect(gateway.topologySpreadConstraints?.[0]?.labelSelector).toEqual({
      matchLabels: { 'app.kubernetes.io/name': 'gateway', 'app.kubernetes.io/instance': 'flotilla' },
    });
    expect(envOf(gateway).get('FLOTILLA_LOG_LEVEL')?.value).toBe('debug');
    expect(gateway.containers[0]!.envFrom).toEqual([{ configMapRef: { name: 'extra' } }]);
    expect(
      (find('catalog, ServiceMonitor, scheduling', 'Deployment', 'flotilla-gateway') as Workload).spec.template.metadata
        .annotations?.['team'],
    ).toBe('agents');
    // the tag defaults to the chart's appVersion
    expect(pods('defaults').get('gateway')!.containers[0]!.image).toMatch(
      /^ghcr\.io\/flotilla\/flotilla:\d+\.\d+\.\d+/,
    );
    expect(find('catalog, ServiceMonitor, scheduling', 'ServiceMonitor', 'flotilla')).toBeDefined();
  });

  it('ships a helm test that creates a conversation and waits for it to finish', () => {
    const test = find('defaults', 'Pod', 'flotilla-test-conversation') as Manifest & {
      spec: PodSpec & { containers: (Container & { args: string[] })[] };
    };
    expect(test.metadata.annotations?.['helm.sh/hook']).toBe('test');
    const script = test.spec.containers[0]!.args.join('\n');
    expect(script).toContain('/v1/conversations');
    expect(script).toContain("status === 'finished'");
    expect(envOf(test.spec).get('FLOTILLA_URL')?.value).toBe('http://flotilla-gateway');
  });
});

describe('docs/kubernetes.md', () => {
  it('every helm command with --set and the values file it shows render with this chart', async () => {
    const doc = await readFile(join(CHART, '..', '..', 'docs', 'kubernetes.md'), 'utf8');
    const blocks = [...doc.matchAll(/```(sh|yaml)\n([\s\S]*?)```/g)].map((match) => ({
      kind: match[1]!,
      text: match[2]!,
    }));
    const commands = blocks
      .filter((block) => block.kind === 'sh')
      .flatMap((block) => block.text.split('\n'))
      .filter((line) => /^helm (install|upgrade) .*--set /.test(line));
    expect(commands.length).toBeGreaterThanOrEqual(4);
    for (const command of commands) {
      const sets = [...command.matchAll(/--set (\S+)/g)]
        .map((match) => ['--set', match[1]!.replace(/^([^=]+)=""$/, '$1=')])
        .flat();
      const result = await helm(tools, [
        'template',
        'flotilla',
        CHART,
        '--namespace',
        'agents',
        '--kube-version',
        '1.33.0',
        ...sets,
      ]);
      expect(result.code, `${command}: ${result.stderr}`).toBe(0);
    }
    const valuesBlock = blocks.find((block) => block.kind === 'yaml');
    expect(valuesBlock).toBeDefined();
    const file = join(tools.dir, 'docs-values.yaml');
    await writeFile(file, valuesBlock!.text);
    const rendered = await helm(tools, ['template', 'flotilla', CHART, '--namespace', 'agents', '-f', file]);
    expect(rendered.code, rendered.stderr).toBe(0);
    expect(rendered.stdout).toContain('catalog.json');
  }, 120_000);
});
