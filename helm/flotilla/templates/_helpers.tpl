{{- define "flotilla.labels" -}}
app.kubernetes.io/part-of: flotilla
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- /* What every service gets; no secret in it. */ -}}
{{- define "flotilla.baseEnv" -}}
- name: FLOTILLA_NATS_URL
  value: {{ .Values.nats.url | quote }}
- name: FLOTILLA_REPLICAS
  value: {{ .Values.nats.replicas | int64 | quote }}
- name: FLOTILLA_STREAM_MAX_AGE_MS
  value: {{ .Values.nats.retention.maxAgeMs | int64 | quote }}
- name: FLOTILLA_STREAM_MAX_BYTES
  value: {{ .Values.nats.retention.maxBytes | int64 | quote }}
- name: FLOTILLA_AGENT_FILE
  value: /etc/flotilla/agent.json
- name: FLOTILLA_INSTANCE_ID
  valueFrom: { fieldRef: { fieldPath: metadata.name } }
{{- end -}}

{{- /* A service's own NATS user and password (only its own key of the Secret): dict "root" . "user" "<service>". */ -}}
{{- define "flotilla.natsUserEnv" -}}
- name: FLOTILLA_NATS_USER
  value: {{ .user | quote }}
- name: FLOTILLA_NATS_PASSWORD
  valueFrom:
    secretKeyRef: { name: {{ .root.Values.nats.auth.secretName }}, key: {{ .user | quote }} }
{{- end -}}

{{- /* The users of the NATS server, from the official chart's values this chart ships (one list). */ -}}
{{- define "flotilla.natsUsers" -}}
{{- range (.Files.Get "files/nats-values.json" | fromJson).config.merge.authorization.users }}
- {{ .user }}
{{- end }}
{{- end -}}

{{- /* The base, and the model provider's API key: for the services that call the model. */ -}}
{{- define "flotilla.env" -}}
{{ include "flotilla.baseEnv" . }}
- name: {{ .Values.llmApiKey.env }}
  valueFrom:
    secretKeyRef: { name: {{ .Values.llmApiKey.secretName }}, key: {{ .Values.llmApiKey.key }}, optional: true }
{{- end -}}

{{- /* The secrets key: for the gateway, the tool runners and the model callers (a spec's model key may be a secret); never the projector. */ -}}
{{- define "flotilla.secretsKeyEnv" -}}
- name: FLOTILLA_SECRETS_KEY
  valueFrom:
    secretKeyRef: { name: {{ .Values.secretsKey.secretName }}, key: {{ .Values.secretsKey.key }}, optional: true }
{{- end -}}

{{- /* The tool runner's sandbox settings (libs/sandbox/src/settings.ts reads them). */ -}}
{{- define "flotilla.sandboxEnv" -}}
{{- $sandbox := .Values.services.toolRunner.sandbox -}}
- { name: FLOTILLA_SANDBOX, value: {{ $sandbox.kind | quote }} }
- { name: FLOTILLA_SANDBOX_NETWORK, value: {{ $sandbox.network | quote }} }
- { name: FLOTILLA_SANDBOX_MAX_PROCESSES, value: {{ $sandbox.limits.processes | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_MEMORY_MB, value: {{ $sandbox.limits.memoryMb | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_CPU_SECONDS, value: {{ $sandbox.limits.cpuSeconds | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_FILE_MB, value: {{ $sandbox.limits.fileMb | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_DISK_MB, value: {{ $sandbox.limits.diskMb | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_TMP_MB, value: {{ $sandbox.limits.tmpMb | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_IDLE_SECONDS, value: {{ $sandbox.idleSeconds | int64 | quote }} }
- { name: FLOTILLA_SANDBOX_IMAGE, value: {{ $sandbox.image | quote }} }
{{- if and (eq $sandbox.kind "docker") $sandbox.docker.host }}
- { name: DOCKER_HOST, value: {{ $sandbox.docker.host | quote }} }
{{- end }}
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
needs (values.yaml, services.toolRunner.sandbox); the other kinds the runtime's defaults.
services.toolRunner.securityContext goes over all of it.
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

{{- define "flotilla.probes" -}}
ports:
  - { name: health, containerPort: 8080 }
livenessProbe:
  httpGet: { path: /health, port: health }
  periodSeconds: 10
readinessProbe:
  httpGet: { path: /ready, port: health }
  periodSeconds: 5
{{- end -}}
