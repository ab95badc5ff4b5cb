// The Helm chart (helm/flotilla) rendered over the value sets the helm-chart-*.test.ts files check,
// once per test file, and the helpers they read the manifests with.
import { afterAll, beforeAll } from 'vitest';
import { renderChart, unpackKubeTools, type KubeTools, type Manifest } from './k8s-tools.js';

/** The value sets the chart is rendered with (names for the test titles). */
export const VALUE_SETS: Record<string, Record<string, unknown>> = {
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

export let tools: KubeTools;
const rendered = new Map<string, readonly Manifest[]>();

/** Before the file's tests: helm unpacked and the chart rendered with each value set; after them, helm removed. */
export function renderValueSets(): void {
  beforeAll(async () => {
    tools = await unpackKubeTools();
    for (const [name, values] of Object.entries(VALUE_SETS))
      rendered.set(name, await renderChart(tools, values, ['--kube-version', KUBE_VERSION[name] ?? '1.33.0']));
  }, 120_000);
  afterAll(async () => {
    await tools?.dispose();
  });
}

export function manifests(set: string): readonly Manifest[] {
  const found = rendered.get(set);
  if (found === undefined) throw new Error(`no render for ${set}`);
  return found;
}
export function find(set: string, kind: string, name: string): Manifest {
  const found = manifests(set).find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
  if (found === undefined)
    throw new Error(
      `${set}: no ${kind} ${name} among ${manifests(set)
        .map((m) => `${m.kind}/${m.metadata.name}`)
        .join(', ')}`,
    );
  return found;
}

export type EnvVar = {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
};
export type Container = {
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
export type PodSpec = {
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
export type Workload = Manifest & {
  spec: {
    replicas?: number;
    template: { metadata: { annotations?: Record<string, string>; labels?: Record<string, string> }; spec: PodSpec };
  };
};

/** Every pod template of a render, by the pod's app.kubernetes.io/name. */
export function pods(set: string): Map<string, PodSpec> {
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
export function envOf(pod: PodSpec): Map<string, EnvVar> {
  return new Map((pod.containers[0]?.env ?? []).map((variable) => [variable.name, variable]));
}
