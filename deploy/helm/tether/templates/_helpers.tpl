{{/* Names and labels shared by the templates. */}}

{{- define "tether.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tether.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tether.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "tether.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "tether.serverSelector" -}}
app.kubernetes.io/name: {{ include "tether.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{- define "tether.agentSelector" -}}
app.kubernetes.io/name: {{ include "tether.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}

{{- define "tether.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "tether.agentImage" -}}
{{ .Values.agent.image.repository }}:{{ .Values.agent.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "tether.agentStateSecret" -}}
{{- .Values.agent.stateSecret | default (printf "%s-agent-state" (include "tether.fullname" .)) }}
{{- end }}

{{- define "tether.pvcName" -}}
{{- .Values.database.sqlite.persistence.existingClaim | default (printf "%s-data" (include "tether.fullname" .)) }}
{{- end }}

{{- define "tether.scheme" -}}
{{- if .Values.server.tls.secretName }}https{{ else }}http{{ end }}
{{- end }}

{{/* Refuse value combinations that cannot work, with a message saying why. */}}
{{- define "tether.validate" -}}
{{- $db := .Values.database.type }}
{{- if not (has $db (list "sqlite" "postgres")) }}
{{- fail (printf "database.type %q is not one of sqlite, postgres" $db) }}
{{- end }}
{{- if and .Values.server.enabled (eq $db "sqlite") (gt (int .Values.server.replicas) 1) }}
{{- fail "server.replicas > 1 needs database.type=postgres: a SQLite database is one file on one volume" }}
{{- end }}
{{- if and .Values.server.enabled (eq $db "postgres") (not .Values.database.postgres.existingSecret) }}
{{- fail "database.type=postgres needs database.postgres.existingSecret: a Secret holding the postgres:// URL" }}
{{- end }}
{{- if and .Values.server.enabled (eq $db "postgres") (not .Values.sealingKey.existingSecret) }}
{{- fail "database.type=postgres needs sealingKey.existingSecret: every replica must seal with the same key" }}
{{- end }}
{{- if .Values.agent.enabled }}
{{- if not .Values.agent.exec }}
{{- fail "agent.enabled needs agent.exec: the command the agent runs for each job" }}
{{- end }}
{{- if not .Values.agent.registrationToken.existingSecret }}
{{- fail "agent.enabled needs agent.registrationToken.existingSecret: a Secret holding the one-time registration token" }}
{{- end }}
{{- if and (not .Values.server.enabled) (not .Values.agent.server) }}
{{- fail "server.enabled=false needs agent.server: the URL of the tether the agent reports to" }}
{{- end }}
{{- end }}
{{- end }}
