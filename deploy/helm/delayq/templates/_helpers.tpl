{{/* The chart's name. */}}
{{- define "delayq.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every resource: the release name when it contains the chart's name, else <release>-<chart>. */}}
{{- define "delayq.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "delayq.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every resource. */}}
{{- define "delayq.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: delayq
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Selector of every delayd pod of the release (all Deployments). */}}
{{- define "delayq.podSelector" -}}
app.kubernetes.io/name: delayd
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The ConfigMap's and the Secret's names. */}}
{{- define "delayq.configName" -}}
{{- printf "%s-config" (include "delayq.fullname" .) -}}
{{- end -}}
{{- define "delayq.secretName" -}}
{{- default (printf "%s-secrets" (include "delayq.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* The image. */}}
{{- define "delayq.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Whether a Deployment runs the api role. */}}
{{- define "delayq.hasAPI" -}}
{{- $api := false -}}
{{- range .Values.deployments -}}
{{- if has "api" (splitList "," .roles) -}}{{- $api = true -}}{{- end -}}
{{- end -}}
{{- $api -}}
{{- end -}}
