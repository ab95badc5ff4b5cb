{{- /* Labels on every object of this chart. */ -}}
{{- define "flotilla.labels" -}}
app.kubernetes.io/part-of: flotilla
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- /* A service's selector: dict "root" . "name" "<service>". */ -}}
{{- define "flotilla.selector" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- /* The image: registry/repository, then @digest or :tag (the appVersion by default). */ -}}
{{- define "flotilla.image" -}}
{{- $image := .Values.image -}}
{{- $name := $image.repository -}}
{{- if $image.registry }}{{ $name = printf "%s/%s" $image.registry $image.repository }}{{ end -}}
{{- if $image.digest -}}
{{ $name }}@{{ $image.digest }}
{{- else -}}
{{ $name }}:{{ $image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- /* The bundled NATS chart's full name, as that chart computes it (its nats.fullname). */ -}}
{{- define "flotilla.natsFullname" -}}
{{- $nats := .Values.nats -}}
{{- if $nats.fullnameOverride -}}
{{- $nats.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default "nats" $nats.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /*
An egress rule to the outside world: dict "cidrs" <CIDRs> "except" <the cluster's ranges>. The
cluster's ranges are cut out of 0.0.0.0/0; a narrower CIDR is taken as given.
*/ -}}
{{- define "flotilla.outsideWorld" -}}
{{- $blocks := list -}}
{{- $except := .except -}}
{{- range .cidrs -}}
{{- if eq . "0.0.0.0/0" }}{{ $blocks = append $blocks (dict "ipBlock" (dict "cidr" . "except" $except)) }}{{ else }}{{ $blocks = append $blocks (dict "ipBlock" (dict "cidr" .)) }}{{ end -}}
{{- end -}}
{{- toYaml (dict "to" $blocks) -}}
{{- end -}}

{{- /* The NATS URL the services connect to: bus.url, or the bundled chart's Service. */ -}}
{{- define "flotilla.natsUrl" -}}
{{- if .Values.bus.url -}}
{{ .Values.bus.url }}
{{- else if .Values.nats.enabled -}}
nats://{{ include "flotilla.natsFullname" . }}:4222
{{- else -}}
{{- fail "bus.url is required with nats.enabled=false (the NATS you run, e.g. nats://nats.messaging:4222)" -}}
{{- end -}}
{{- end -}}

{{- /* The users of the NATS server: the permission matrix's (files/nats-values.json), one list. */ -}}
{{- define "flotilla.natsUsers" -}}
{{- range (.Files.Get "files/nats-values.json" | fromJson).config.merge.authorization.users }}
- {{ .user }}
{{- end }}
{{- end -}}

{{- /* The agent ConfigMap's data (its checksum rolls the pods that read it). */ -}}
{{- define "flotilla.agentData" -}}
agent.json: {{ .Values.agent | toJson | quote }}
{{- if .Values.agentCatalog }}
catalog.json: {{ .Values.agentCatalog | toJson | quote }}
{{- end }}
{{- end -}}

{{- /* What every service gets; no secret in it. */ -}}
{{- define "flotilla.baseEnv" -}}
- name: FLOTILLA_NATS_URL
  value: {{ include "flotilla.natsUrl" . | quote }}
- name: FLOTILLA_REPLICAS
  value: {{ .Values.bus.replicas | int64 | quote }}
- name: FLOTILLA_STREAM_MAX_AGE_MS
  value: {{ .Values.bus.retention.maxAgeMs | int64 | quote }}
- name: FLOTILLA_STREAM_MAX_BYTES
  value: {{ .Values.bus.retention.maxBytes | int64 | quote }}
- name: FLOTILLA_INSTANCE_ID
  valueFrom: { fieldRef: { fieldPath: metadata.name } }
{{- end -}}

{{- /* The agent settings' files: for the gateway, the step workers and the condenser. */ -}}
{{- define "flotilla.agentEnv" -}}
- name: FLOTILLA_AGENT_FILE
  value: /etc/flotilla/agent.json
{{- if .Values.agentCatalog }}
- name: FLOTILLA_AGENT_CATALOG_FILE
  value: /etc/flotilla/catalog.json
{{- end }}
{{- end -}}

{{- /* A service's own NATS user and password (only its own key of the Secret, required): dict "root" . "user" "<service>". */ -}}
{{- define "flotilla.natsUserEnv" -}}
- name: FLOTILLA_NATS_USER
  value: {{ .user | quote }}
- name: FLOTILLA_NATS_PASSWORD
  valueFrom:
    secretKeyRef: { name: {{ .root.Values.bus.auth.secretName | quote }}, key: {{ .user | quote }} }
{{- end -}}

{{- /* The model providers' keys (modelKeys, each required): for the services that call the model only. */ -}}
{{- define "flotilla.modelKeyEnv" -}}
{{- range .Values.modelKeys }}
- name: {{ .env }}
  valueFrom:
    secretKeyRef: { name: {{ .secretName | quote }}, key: {{ .key | quote }} }
{{- end }}
{{- end -}}

{{- /* The secrets key (required while secretsKey.secretName is set): gateway, tool runners, step workers and condenser; never the projector. */ -}}
{{- define "flotilla.secretsKeyEnv" -}}
{{- if .Values.secretsKey.secretName }}
- name: FLOTILLA_SECRETS_KEY
  valueFrom:
    secretKeyRef: { name: {{ .Values.secretsKey.secretName | quote }}, key: {{ .Values.secretsKey.key | quote }} }
{{- end }}
{{- end -}}

{{- /* A service's extra env and envFrom: the service's values. */ -}}
{{- define "flotilla.extraEnv" -}}
{{- with .extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- /* The tool runner's sandbox settings (libs/sandbox/src/settings.ts reads them). */ -}}
{{- define "flotilla.sandboxEnv" -}}
{{- $sandbox := .Values.services.toolRunner.sandbox -}}
- { name: FLOTILLA_SANDBOX, value: {{ $sandbox.kind | quote }} }
- { name: FLOTILLA_SANDBOX_NETWORK, value: {{ $sandbox.network | quote }} }
- { name: FLOTILLA_SANDBOX_MAX_PROCESSES, value: {{ $sandbox.limits.processes | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_MEMORY_MB, value: {{ $sandbox.limits.memoryMb | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_CPU_SECONDS, value: {{ $sandbox.limits.cpuSeconds | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_CPUS, value: {{ $sandbox.limits.cpus | toString | quote }} }
- { name: FLOTILLA_SANDBOX_FILE_MB, value: {{ $sandbox.limits.fileMb | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_DISK_MB, value: {{ $sandbox.limits.diskMb | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_TMP_MB, value: {{ $sandbox.limits.tmpMb | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_IDLE_SECONDS, value: {{ $sandbox.idleSeconds | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_IMAGE, value: {{ $sandbox.image | quote }} }
{{- if and (eq $sandbox.kind "docker") $sandbox.docker.host }}
- { name: DOCKER_HOST, value: {{ $sandbox.docker.host | quote }} }
{{- end }}
{{- end -}}

{{- /*
A service pod's metadata: dict "root" . "name" "<service>" "svc" <its values> "annotations" <extra>.
Checksums of what the pod reads from ConfigMaps roll it when they change.
*/ -}}
{{- define "flotilla.podMetadata" -}}
{{- $root := .root -}}
{{- $labels := merge (dict) (.svc.podLabels | default dict) ($root.Values.podDefaults.labels | default dict) -}}
{{- $annotations := merge (dict "prometheus.io/scrape" "true" "prometheus.io/port" "8080" "prometheus.io/path" "/metrics") (.annotations | default dict) (.svc.podAnnotations | default dict) ($root.Values.podDefaults.annotations | default dict) -}}
{{- if .agent -}}
{{- $_ := set $annotations "checksum/agent" (include "flotilla.agentData" $root | sha256sum) -}}
{{- end -}}
metadata:
  labels:
    {{- include "flotilla.selector" (dict "root" $root "name" .name) | nindent 4 }}
    app.kubernetes.io/part-of: flotilla
    {{- with $labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    {{- toYaml $annotations | nindent 4 }}
{{- end -}}

{{- /*
What every service pod's spec gets: dict "root" . "name" "<service>" "svc" <its values>.
No service-account token (no service talks to the Kubernetes API), no service links, the
scheduling settings (the service's over podDefaults), pull secrets.
*/ -}}
{{- define "flotilla.podScheduling" -}}
{{- $root := .root -}}
{{- $defaults := $root.Values.podDefaults -}}
automountServiceAccountToken: false
enableServiceLinks: false
{{- with $root.Values.image.pullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . | quote }}
  {{- end }}
{{- end }}
{{- with (.svc.nodeSelector | default $defaults.nodeSelector) }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.svc.tolerations | default $defaults.tolerations) }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.svc.affinity | default $defaults.affinity) }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $defaults.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- $spread := .svc.topologySpreadConstraints | default $defaults.topologySpreadConstraints }}
{{- if $spread }}
topologySpreadConstraints:
  {{- range $spread }}
  - {{- toYaml (merge (dict "labelSelector" (dict "matchLabels" (include "flotilla.selector" (dict "root" $root "name" $.name) | fromYaml))) .) | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}

{{- /* The pod securityContext of the stateless services: uid/gid 1000 (the image's node user), never root. */ -}}
{{- define "flotilla.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile: { type: RuntimeDefault }
{{- end -}}

{{- /* The container securityContext of the stateless services: nothing to escalate to, a read-only root. */ -}}
{{- define "flotilla.securityContext" -}}
allowPrivilegeEscalation: false
privileged: false
readOnlyRootFilesystem: true
capabilities: { drop: [ALL] }
{{- end -}}

{{- /* A seccomp or AppArmor profile value: { type, localhostProfile only for Localhost }. */ -}}
{{- define "flotilla.profile" -}}
{{- $profile := dict "type" .type -}}
{{- if eq .type "Localhost" -}}
{{- if not .localhostProfile -}}
{{- fail "a Localhost seccomp or AppArmor profile needs its localhostProfile" -}}
{{- end -}}
{{- $_ := set $profile "localhostProfile" .localhostProfile -}}
{{- end -}}
{{- toYaml $profile -}}
{{- end -}}

{{- /* The same AppArmor choice as the annotation of Kubernetes < 1.30. */ -}}
{{- define "flotilla.appArmorAnnotation" -}}
{{- if eq .type "Localhost" -}}localhost/{{ .localhostProfile }}
{{- else if eq .type "RuntimeDefault" -}}runtime/default
{{- else -}}unconfined
{{- end -}}
{{- end -}}

{{- /* The tool runner pod's securityContext: the chart's, with services.toolRunner.podSecurityContext over it. */ -}}
{{- define "flotilla.toolRunner.podSecurityContext" -}}
{{- $context := dict "runAsNonRoot" true "runAsUser" 1000 "runAsGroup" 1000 "fsGroup" 1000 "fsGroupChangePolicy" "OnRootMismatch" -}}
{{- toYaml (mergeOverwrite $context (deepCopy (.Values.services.toolRunner.podSecurityContext | default dict))) -}}
{{- end -}}

{{- /*
The tool runner container's securityContext. Never privileged, no capabilities, no privilege
escalation: bwrap needs none of them (it makes user namespaces as an unprivileged user and sets
no_new_privs itself). The bwrap kind gets the seccomp and AppArmor profiles and the /proc it
needs (values.yaml, services.toolRunner.sandbox); the other kinds the runtime's defaults. The
root filesystem stays writable (the exception: the sandboxes bind the image's system into
their own mount namespaces). services.toolRunner.securityContext goes over all of it.
*/ -}}
{{- define "flotilla.toolRunner.securityContext" -}}
{{- $sandbox := .Values.services.toolRunner.sandbox -}}
{{- $context := dict "privileged" false "allowPrivilegeEscalation" false "capabilities" (dict "drop" (list "ALL")) -}}
{{- if eq $sandbox.kind "bwrap" -}}
{{- $_ := set $context "seccompProfile" (include "flotilla.profile" $sandbox.seccompProfile | fromYaml) -}}
{{- if semverCompare ">=1.30-0" .Capabilities.KubeVersion.Version -}}
{{- $_ := set $context "appArmorProfile" (include "flotilla.profile" $sandbox.appArmorProfile | fromYaml) -}}
{{- end -}}
{{- if eq $sandbox.procMount "Unmasked" -}}
{{- $_ := set $context "procMount" "Unmasked" -}}
{{- end -}}
{{- else -}}
{{- $_ := set $context "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- end -}}
{{- toYaml (mergeOverwrite $context (deepCopy (.Values.services.toolRunner.securityContext | default dict))) -}}
{{- end -}}

{{- /* Probes on the health port: started (up to 2 minutes), alive, ready (connected to NATS). */ -}}
{{- define "flotilla.probes" -}}
ports:
  - { name: health, containerPort: 8080 }
startupProbe:
  httpGet: { path: /health, port: health }
  periodSeconds: 2
  failureThreshold: 60
livenessProbe:
  httpGet: { path: /health, port: health }
  periodSeconds: 10
  timeoutSeconds: 3
readinessProbe:
  httpGet: { path: /ready, port: health }
  periodSeconds: 5
  timeoutSeconds: 3
{{- end -}}

{{- /*
A stateless service's Deployment: dict "root" . "name" "<service>" "key" "<values key>"
"agent" <reads the agent settings> "modelKey" <calls the model> "secretsKey" <gets the secrets key>
"env" <its own env, YAML> "grace" <termination grace seconds>.
*/ -}}
{{- define "flotilla.deployment" -}}
{{- $root := .root -}}
{{- $svc := index $root.Values.services .key -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $root.Release.Name }}-{{ .name }}
  labels:
    {{- include "flotilla.labels" $root | nindent 4 }}
    app.kubernetes.io/name: {{ .name }}
spec:
  {{- if not .scaled }}
  replicas: {{ $svc.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    type: RollingUpdate
    rollingUpdate: { maxUnavailable: 0, maxSurge: 1 }
  selector:
    matchLabels: {{- include "flotilla.selector" (dict "root" $root "name" .name) | nindent 6 }}
  template:
    {{- include "flotilla.podMetadata" (dict "root" $root "name" .name "svc" $svc "agent" .agent) | nindent 4 }}
    spec:
      terminationGracePeriodSeconds: {{ .grace | default 30 }}
      {{- include "flotilla.podScheduling" (dict "root" $root "name" .name "svc" $svc) | nindent 6 }}
      securityContext: {{- include "flotilla.podSecurityContext" $root | nindent 8 }}
      containers:
        - name: {{ .name }}
          image: {{ include "flotilla.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: [{{ printf "services/%s/dist/main.mjs" .name | quote }}]
          securityContext: {{- include "flotilla.securityContext" $root | nindent 12 }}
          env:
            {{- include "flotilla.baseEnv" $root | nindent 12 }}
            {{- include "flotilla.natsUserEnv" (dict "root" $root "user" .name) | nindent 12 }}
            {{- if .agent }}
            {{- include "flotilla.agentEnv" $root | nindent 12 }}
            {{- end }}
            {{- if .modelKey }}
            {{- include "flotilla.modelKeyEnv" $root | nindent 12 }}
            {{- end }}
            {{- if .secretsKey }}
            {{- include "flotilla.secretsKeyEnv" $root | nindent 12 }}
            {{- end }}
            {{- with .env }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- with $svc.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- with $svc.envFrom }}
          envFrom: {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- include "flotilla.probes" $root | nindent 10 }}
          resources: {{- toYaml $svc.resources | nindent 12 }}
          volumeMounts:
            - { name: tmp, mountPath: /tmp }
            {{- if .agent }}
            - { name: agent, mountPath: /etc/flotilla, readOnly: true }
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: { sizeLimit: 256Mi }
        {{- if .agent }}
        - name: agent
          configMap: { name: {{ $root.Release.Name }}-agent }
        {{- end }}
{{- end -}}

{{- /* A service's PodDisruptionBudget, when its pdb is enabled: dict "root" . "name" "<service>" "svc" <its values>. */ -}}
{{- define "flotilla.pdb" -}}
{{- if .svc.pdb.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .root.Release.Name }}-{{ .name }}
  labels:
    {{- include "flotilla.labels" .root | nindent 4 }}
    app.kubernetes.io/name: {{ .name }}
spec:
  maxUnavailable: {{ .svc.pdb.maxUnavailable }}
  selector:
    matchLabels: {{- include "flotilla.selector" (dict "root" .root "name" .name) | nindent 6 }}
{{- end }}
{{- end -}}
