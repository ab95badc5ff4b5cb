// The Helm chart (helm/flotilla) rendered as users install it: lint, templates over several value
// sets, every manifest against the Kubernetes schemas (kubernetes-models, KEDA's and the
// Prometheus Operator's), invalid values refused by values.schema.json, secrets only where they
// are used, the settings each service is given, and the commands docs/kubernetes.md shows.
// (The bundled NATS, autoscaling, sandboxes and network policies: helm-chart-workloads.test.ts.)
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART, helm, renderChart, templateChart, type Manifest } from './k8s-tools.js';
import {
  envOf,
  find,
  manifests,
  pods,
  renderValueSets,
  tools,
  VALUE_SETS,
  type Container,
  type PodSpec,
  type Workload,
} from './helm-chart-renders.js';

renderValueSets();

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
