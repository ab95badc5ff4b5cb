{{- define "flotilla.labels" -}}
app.kubernetes.io/part-of: flotilla
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "flotilla.env" -}}
- name: FLOTILLA_NATS_URL
  value: {{ .Values.nats.url | quote }}
- name: FLOTILLA_AGENT_FILE
  value: /etc/flotilla/agent.json
- name: FLOTILLA_INSTANCE_ID
  valueFrom: { fieldRef: { fieldPath: metadata.name } }
- name: {{ .Values.llmApiKey.env }}
  valueFrom:
    secretKeyRef: { name: {{ .Values.llmApiKey.secretName }}, key: {{ .Values.llmApiKey.key }}, optional: true }
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
