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
{{- if and .Values.server.enabled .Values.metrics.serviceMonitor.enabled (not .Values.server.diagnostics.enabled) (not .Values.metrics.serviceMonitor.authorization.secretName) }}
{{- fail "metrics.serviceMonitor.enabled without server.diagnostics.enabled needs metrics.serviceMonitor.authorization.secretName: the agent port's /metrics takes an admin token (a Secret holding one from 'tether admin-token create --name prometheus --role viewer'); or enable server.diagnostics, whose port needs none" }}
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

{{/*
GOMEMLIMIT for a container: 90% of its memory limit (a Kubernetes quantity:
512Mi, 1Gi, 1.5G, 536870912), in MiB. The Go runtime's soft limit works best
a little below the hard one: the collector works harder there instead of the
container being killed. Called with the quantity.
*/}}
{{- define "tether.goMemLimit" -}}
{{- $q := toString . }}
{{- $units := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $q }}
{{- $suffix := trimPrefix $number $q }}
{{- if or (not $number) (not (hasKey $units $suffix)) }}
{{- fail (printf "memory limit %q: GOMEMLIMIT is set from a quantity like 512Mi, 1Gi or 1G (or set GOMEMLIMIT in extraEnv)" $q) }}
{{- end }}
{{- $mib := floor (divf (mulf (float64 $number) (index $units $suffix) 0.9) 1048576) }}
{{- if lt $mib 1.0 }}
{{- fail (printf "memory limit %q is too small to run tether" $q) }}
{{- end }}
{{- printf "%dMiB" (int64 $mib) }}
{{- end }}

{{/*
Whole seconds of a duration of hours, minutes and seconds (30s, 5m, 1m30s;
values.schema.json allows no other form). Called with the duration.
*/}}
{{- define "tether.seconds" -}}
{{- $total := 0 }}
{{- range regexFindAll "[0-9]+[hms]" (toString .) -1 }}
{{- $n := atoi (trimSuffix "h" (trimSuffix "m" (trimSuffix "s" .))) }}
{{- if hasSuffix "h" . }}{{ $n = mul $n 3600 }}{{ else if hasSuffix "m" . }}{{ $n = mul $n 60 }}{{ end }}
{{- $total = add $total $n }}
{{- end }}
{{- $total }}
{{- end }}

{{/* Whether an extraEnv list (the argument) sets GOMEMLIMIT itself: "true" or "". */}}
{{- define "tether.setsGoMemLimit" -}}
{{- range . }}{{ if eq .name "GOMEMLIMIT" }}true{{ end }}{{ end }}
{{- end }}
