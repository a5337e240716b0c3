{{/*
The chart name, or nameOverride.
*/}}
{{- define "dynamic-ingress-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object name: fullnameOverride, else the release name when
it holds the chart name, else <release>-<chart>. Kept short enough for the
longest suffix (-controller-manager-metrics-service) in a 63-character name.
*/}}
{{- define "dynamic-ingress-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 28 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 28 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 28 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "dynamic-ingress-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object: the chart's, then commonLabels (without the keys
the chart sets itself, which it keeps).
*/}}
{{- define "dynamic-ingress-operator.labels" -}}
helm.sh/chart: {{ include "dynamic-ingress-operator.chart" . }}
app.kubernetes.io/name: {{ include "dynamic-ingress-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- with .Chart.AppVersion }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with omit .Values.commonLabels "helm.sh/chart" "app.kubernetes.io/name" "app.kubernetes.io/instance" "app.kubernetes.io/version" "app.kubernetes.io/managed-by" "control-plane" }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The labels that select the manager's pods (the Deployment, the Services, the
PodDisruptionBudget, the anti-affinity). control-plane: controller-manager is
what config/ uses too, so config/network-policy selects these pods as well.
*/}}
{{- define "dynamic-ingress-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dynamic-ingress-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end }}

{{- define "dynamic-ingress-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (printf "%s-controller-manager" (include "dynamic-ingress-operator.fullname" .)) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "dynamic-ingress-operator.webhookServiceName" -}}
{{- printf "%s-webhook-service" (include "dynamic-ingress-operator.fullname" .) }}
{{- end }}

{{- define "dynamic-ingress-operator.certificateName" -}}
{{- printf "%s-serving-cert" (include "dynamic-ingress-operator.fullname" .) }}
{{- end }}

{{/*
The Secret holding the webhook server's tls.crt and tls.key.
*/}}
{{- define "dynamic-ingress-operator.webhookSecretName" -}}
{{- if .Values.webhook.certManager.enabled }}
{{- printf "%s-webhook-server-cert" (include "dynamic-ingress-operator.fullname" .) }}
{{- else }}
{{- .Values.webhook.existingSecret }}
{{- end }}
{{- end }}

{{- /* repository:tag, and @digest after it when a digest is set: the
runtime pulls by the digest, the tag says which version it is. */ -}}
{{- define "dynamic-ingress-operator.image" -}}
{{- $image := printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- if .Values.image.digest }}
{{- $image = printf "%s@%s" $image .Values.image.digest }}
{{- end }}
{{- $image }}
{{- end }}

{{/*
Whether the manager follows ClusterDynamicIngressStates (--cluster-states):
always cluster-wide; in namespaced mode only with
clusterStates.followInNamespacedMode, which grants the access it needs.
*/}}
{{- define "dynamic-ingress-operator.followsClusterStates" -}}
{{- if or (not .Values.watchNamespaces) .Values.clusterStates.followInNamespacedMode }}true{{ else }}false{{ end }}
{{- end }}

{{/*
The namespace of the Secrets that cluster states' probe headers read
(--cluster-resource-namespace, or the manager's own namespace).
*/}}
{{- define "dynamic-ingress-operator.clusterResourceNamespace" -}}
{{- default .Release.Namespace .Values.clusterStates.resourceNamespace }}
{{- end }}

{{/*
Where the Deployment mounts the certificate Secrets. The webhook one is the
manager's default --webhook-cert-path.
*/}}
{{- define "dynamic-ingress-operator.webhookCertPath" -}}
/tmp/k8s-webhook-server/serving-certs
{{- end }}
{{- define "dynamic-ingress-operator.metricsCertPath" -}}
/tmp/k8s-metrics-server/metrics-certs
{{- end }}

{{/*
The manager's arguments: every flag of cmd/main.go, from the values.
*/}}
{{- define "dynamic-ingress-operator.args" -}}
- --leader-elect={{ .Values.leaderElection.enabled }}
{{- with .Values.leaderElection.namespace }}
- --leader-election-namespace={{ . }}
{{- end }}
- --health-probe-bind-address=:{{ int64 .Values.healthProbe.port }}
{{- if .Values.metrics.enabled }}
- --metrics-bind-address=:{{ int64 .Values.metrics.port }}
{{- else }}
- --metrics-bind-address=0
{{- end }}
- --metrics-secure={{ .Values.metrics.secure }}
{{- if .Values.metrics.existingSecret }}
- --metrics-cert-path={{ include "dynamic-ingress-operator.metricsCertPath" . }}
{{- end }}
- --enable-webhooks={{ .Values.webhook.enabled }}
- --enable-http2={{ .Values.http2.enabled }}
- --webhook-port={{ int64 .Values.webhook.port }}
- --webhook-cert-path={{ include "dynamic-ingress-operator.webhookCertPath" . }}
- --probe-deny-cidrs={{ join "," .Values.probes.denyCIDRs }}
{{- with .Values.probes.allowHosts }}
- --probe-allow-hosts={{ join "," . }}
{{- end }}
- --probe-max-body-bytes={{ int64 .Values.probes.maxBodyBytes }}
- --max-concurrent-reconciles={{ int64 .Values.controller.maxConcurrentReconciles }}
- --state-max-concurrent-reconciles={{ int64 .Values.controller.stateMaxConcurrentReconciles }}
- --flip-stalled-after={{ .Values.notifications.flipStalledAfter }}
- --gc-percent-at-rest={{ int64 .Values.memory.gcPercentAtRest }}
- --kube-api-qps={{ .Values.kubeAPI.qps }}
- --kube-api-burst={{ int64 .Values.kubeAPI.burst }}
{{- with .Values.watchNamespaces }}
- --namespaces={{ join "," . }}
{{- end }}
- --cluster-states={{ include "dynamic-ingress-operator.followsClusterStates" . }}
{{- with .Values.clusterStates.resourceNamespace }}
- --cluster-resource-namespace={{ . }}
{{- end }}
{{- with .Values.logging.level }}
- --zap-log-level={{ . }}
{{- end }}
{{- with .Values.logging.encoder }}
- --zap-encoder={{ . }}
{{- end }}
{{- with .Values.logging.stacktraceLevel }}
- --zap-stacktrace-level={{ . }}
{{- end }}
{{- with .Values.logging.timeEncoding }}
- --zap-time-encoding={{ . }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
Refuses values that would install something that cannot work.
*/}}
{{- define "dynamic-ingress-operator.validate" -}}
{{- if and .Values.webhook.enabled .Values.webhook.certManager.enabled (not (.Capabilities.APIVersions.Has "cert-manager.io/v1")) }}
{{- fail "the webhooks need a serving certificate and this cluster has no cert-manager.io/v1 API: install cert-manager (https://cert-manager.io/docs/installation/), or set webhook.certManager.enabled=false with webhook.existingSecret and webhook.caBundle (your own certificate). helm template needs --api-versions cert-manager.io/v1" }}
{{- end }}
{{- if and .Values.webhook.enabled (not .Values.webhook.certManager.enabled) }}
{{- if not .Values.webhook.existingSecret }}
{{- fail "webhook.existingSecret is required when webhook.certManager.enabled is false: a kubernetes.io/tls Secret for the webhook server" }}
{{- end }}
{{- if not .Values.webhook.caBundle }}
{{- fail "webhook.caBundle is required when webhook.certManager.enabled is false: the base64 PEM CA that signed webhook.existingSecret's certificate" }}
{{- end }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "leaderElection.enabled must be true when replicaCount > 1: every replica would run the controllers and probes" }}
{{- end }}
{{- if not (has .Values.podAntiAffinityPreset (list "" "soft" "hard")) }}
{{- fail "podAntiAffinityPreset must be soft, hard or empty" }}
{{- end }}
{{- end }}
