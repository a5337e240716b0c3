package chart_test

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// kinds counts the rendered objects by kind.
func kinds(objs []*unstructured.Unstructured) map[string]int {
	out := map[string]int{}
	for _, o := range objs {
		out[o.GetKind()]++
	}
	return out
}

// containerPort returns the container port a Service's targetPort reaches.
func containerPort(c corev1.Container, target intstr.IntOrString) int32 {
	for _, p := range c.Ports {
		if (target.Type == intstr.String && p.Name == target.StrVal) || (target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
			return p.ContainerPort
		}
	}
	return 0
}

// toAny converts labels for an unstructured object.
func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// webhookClientConfigs returns every webhook's name and client config.
func webhookClientConfigs(t *testing.T, objs []*unstructured.Unstructured) map[string]admissionregistrationv1.WebhookClientConfig {
	t.Helper()
	out := map[string]admissionregistrationv1.WebhookClientConfig{}
	for _, o := range suite.Find(objs, "MutatingWebhookConfiguration") {
		for _, w := range suite.Decode[admissionregistrationv1.MutatingWebhookConfiguration](t, o).Webhooks {
			out[w.Name] = w.ClientConfig
		}
	}
	for _, o := range suite.Find(objs, "ValidatingWebhookConfiguration") {
		for _, w := range suite.Decode[admissionregistrationv1.ValidatingWebhookConfiguration](t, o).Webhooks {
			out[w.Name] = w.ClientConfig
		}
	}
	return out
}

// checkWiring checks what holds with any values: the Services and the
// PodDisruptionBudget select the manager's pods and reach its ports, the
// webhooks call the webhook Service, the bindings name the manager's
// ServiceAccount, and every namespaced object is in the release namespace.
func checkWiring(t *testing.T, objs []*unstructured.Unstructured, namespace string) {
	t.Helper()
	deploy := suite.Only[appsv1.Deployment](t, objs, "Deployment")
	pod := deploy.Spec.Template.Spec
	manager := managerContainer(t, deploy)
	if !suite.SelectsPods(t, deploy.Spec.Selector, deploy) {
		t.Errorf("the Deployment's selector %v does not select its own pods %v", deploy.Spec.Selector, deploy.Spec.Template.Labels)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		default:
			if o.GetNamespace() != namespace && o.GetKind() != "Role" && o.GetKind() != "RoleBinding" {
				t.Errorf("%s %s is in namespace %q, want the release namespace %q", o.GetKind(), o.GetName(), o.GetNamespace(), namespace)
			}
		}
	}

	for _, o := range suite.Find(objs, "Service") {
		svc := suite.Decode[corev1.Service](t, o)
		if !suite.SelectsPods(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, deploy) {
			t.Errorf("Service %s selector %v does not select the manager's pods %v", svc.Name, svc.Spec.Selector, deploy.Spec.Template.Labels)
		}
		for _, p := range svc.Spec.Ports {
			if containerPort(manager, p.TargetPort) == 0 {
				t.Errorf("Service %s port %s targets %q, which is no port of the manager (%+v)", svc.Name, p.Name, p.TargetPort.String(), manager.Ports)
			}
		}
	}
	for _, o := range suite.Find(objs, "PodDisruptionBudget") {
		pdb := suite.Decode[policyv1.PodDisruptionBudget](t, o)
		if !suite.SelectsPods(t, pdb.Spec.Selector, deploy) {
			t.Errorf("PodDisruptionBudget selector %v does not select the manager's pods %v", pdb.Spec.Selector, deploy.Spec.Template.Labels)
		}
	}
	if a := pod.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if !suite.SelectsPods(t, term.PodAffinityTerm.LabelSelector, deploy) {
				t.Errorf("the pod anti-affinity selects %v, not the manager's pods %v", term.PodAffinityTerm.LabelSelector, deploy.Spec.Template.Labels)
			}
		}
	}

	// The webhooks call the webhook Service, which reaches --webhook-port.
	flags := effectiveFlags(t, manager.Args)
	for name, cc := range webhookClientConfigs(t, objs) {
		if cc.Service == nil {
			t.Errorf("webhook %s calls %v, want a Service", name, cc)
			continue
		}
		svc := suite.Named[corev1.Service](t, objs, "Service", cc.Service.Name)
		if svc.Namespace != cc.Service.Namespace {
			t.Errorf("webhook %s calls Service %s/%s; it is in %s", name, cc.Service.Namespace, cc.Service.Name, svc.Namespace)
		}
		port := ptr.Deref(cc.Service.Port, 443)
		var target int32
		for _, p := range svc.Spec.Ports {
			if p.Port == port {
				target = containerPort(manager, p.TargetPort)
			}
		}
		if fmt.Sprint(target) != flags["webhook-port"] {
			t.Errorf("webhook %s reaches container port %d through Service %s:%d; the manager serves webhooks on %s", name, target, svc.Name, port, flags["webhook-port"])
		}
	}
	// Metrics: the Service reaches the port the manager serves them on.
	if addr := flags["metrics-bind-address"]; addr != "0" {
		var svcs []string
		for _, o := range suite.Find(objs, "Service") {
			if o.GetLabels()["app.kubernetes.io/component"] == "metrics" {
				svc := suite.Decode[corev1.Service](t, o)
				svcs = append(svcs, svc.Name)
				if got := fmt.Sprintf(":%d", containerPort(manager, svc.Spec.Ports[0].TargetPort)); got != addr {
					t.Errorf("metrics Service reaches container port %s; the manager serves metrics on %s", got, addr)
				}
			}
		}
		if len(svcs) != 1 {
			t.Errorf("metrics Services %v, want one (the manager serves metrics on %s)", svcs, addr)
		}
	}

	// Each binding names the manager's ServiceAccount and a role the chart
	// renders.
	sa := corev1.ServiceAccount{}
	sa.Name, sa.Namespace = pod.ServiceAccountName, deploy.Namespace
	subject := rbacv1.Subject{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, o := range suite.Find(objs, kind) {
			b := suite.Decode[rbacv1.RoleBinding](t, o)
			if !slices.Equal(b.Subjects, []rbacv1.Subject{subject}) {
				t.Errorf("%s %s binds %v, want the manager's ServiceAccount %v", kind, b.Name, b.Subjects, subject)
			}
			var role *unstructured.Unstructured
			for _, r := range suite.Find(objs, b.RoleRef.Kind) {
				if r.GetName() == b.RoleRef.Name && (kind == "ClusterRoleBinding" || r.GetNamespace() == b.Namespace) {
					role = r
				}
			}
			if role == nil {
				t.Errorf("%s %s refers to %s %s, which the chart does not render", kind, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
			}
		}
	}
}

// volumeMountedAt returns the Secret mounted into the manager at path.
func secretMountedAt(t *testing.T, deploy *appsv1.Deployment, path string) string {
	t.Helper()
	var volume string
	for _, m := range managerContainer(t, deploy).VolumeMounts {
		if m.MountPath == path {
			volume = m.Name
		}
	}
	for _, v := range deploy.Spec.Template.Spec.Volumes {
		if v.Name == volume && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}

func TestDefaultValues(t *testing.T) {
	objs := renderDefault(t)
	checkWiring(t, objs, bundleNamespace)

	got := kinds(objs)
	want := map[string]int{
		"CustomResourceDefinition": len(crdFiles(t)),
		"ServiceAccount":           1,
		// manager, metrics-auth, metrics-reader, the user roles
		"ClusterRole":        3 + strings.Count(readTemplate(t, "rbac/user-roles.yaml"), "\nkind: ClusterRole\n"),
		"ClusterRoleBinding": 2,
		"Role":               1, "RoleBinding": 1,
		"Deployment": 1, "Service": 2, "PodDisruptionBudget": 1,
		// self-signed and CA Issuers; CA and serving Certificates
		"Issuer": 2, "Certificate": 2,
		"MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects by kind with the default values (-want +got):\n%s", diff)
	}

	deploy := suite.Only[appsv1.Deployment](t, objs, "Deployment")
	if r := ptr.Deref(deploy.Spec.Replicas, 1); r != 2 {
		t.Errorf("replicas %d, want 2", r)
	}
	if r := ptr.Deref(deploy.Spec.RevisionHistoryLimit, -1); r != 10 {
		t.Errorf("revisionHistoryLimit %d, want 10", r)
	}
	manager := managerContainer(t, deploy)
	// The manager's measured RSS at rest with 10 000 switches, and their
	// peak with headroom (docs/benchmarks.md, "Scale").
	if got := manager.Resources.Requests.Memory().String(); got != "256Mi" {
		t.Errorf("memory request %s, want 256Mi", got)
	}
	if got := manager.Resources.Limits.Memory().String(); got != "512Mi" {
		t.Errorf("memory limit %s, want 512Mi", got)
	}
	if len(manager.Env) != 0 {
		t.Errorf("env %v, want none", manager.Env)
	}
	if manager.Image != "dynamic-ingress-operator:"+loadChart(t).Metadata.AppVersion {
		t.Errorf("image %q, want the chart's appVersion as its tag", manager.Image)
	}
	flags := effectiveFlags(t, manager.Args)
	if flags["leader-elect"] != "true" || flags["enable-webhooks"] != "true" || flags["metrics-secure"] != "true" {
		t.Errorf("manager args %v: want leader election, webhooks and secure metrics on", manager.Args)
	}

	// cert-manager issues the webhook certificate for the Service, the
	// manager mounts it where --webhook-cert-path says, and cert-manager
	// injects its CA into both webhook configurations.
	cert := suite.Named[certmanagerv1.Certificate](t, objs, "Certificate", bundleRelease+"-serving-cert")
	suite.CheckCAChain(t, objs, cert)
	svc := suite.Named[corev1.Service](t, objs, "Service", bundleRelease+"-webhook-service")
	for _, dns := range []string{svc.Name + "." + svc.Namespace + ".svc", svc.Name + "." + svc.Namespace + ".svc.cluster.local"} {
		if !slices.Contains(cert.Spec.DNSNames, dns) {
			t.Errorf("Certificate DNS names %v do not cover %s", cert.Spec.DNSNames, dns)
		}
	}
	if got := secretMountedAt(t, deploy, flags["webhook-cert-path"]); got != cert.Spec.SecretName {
		t.Errorf("the manager has Secret %q at --webhook-cert-path %s, want the Certificate's %q", got, flags["webhook-cert-path"], cert.Spec.SecretName)
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		o := suite.Only[unstructured.Unstructured](t, objs, kind)
		if got, want := o.GetAnnotations()["cert-manager.io/inject-ca-from"], cert.Namespace+"/"+cert.Name; got != want {
			t.Errorf("%s cert-manager.io/inject-ca-from = %q, want %q", kind, got, want)
		}
	}
	for name, cc := range webhookClientConfigs(t, objs) {
		if len(cc.CABundle) != 0 {
			t.Errorf("webhook %s has a caBundle; cert-manager injects it", name)
		}
	}

	for _, o := range suite.Find(objs, "CustomResourceDefinition") {
		if o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s has no helm.sh/resource-policy: keep (crds.keep defaults to true)", o.GetName())
		}
	}
}

// customValues is what a production install might set: three replicas, its
// own certificate instead of cert-manager's, a ServiceMonitor, its own
// flags, and CRDs managed elsewhere.
func customValues() map[string]any {
	return map[string]any{
		"replicaCount": 3,
		"image":        map[string]any{"repository": "registry.example.com/dio", "tag": "v9.9.9", "pullPolicy": "Always"},
		"crds":         map[string]any{"install": false},
		"webhook": map[string]any{
			"certManager":    map[string]any{"enabled": false},
			"existingSecret": "dio-webhook-tls",
			"caBundle":       base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")),
		},
		"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}, "interval": "30s"}},
		"probes": map[string]any{
			"denyCIDRs":    []any{"127.0.0.0/8", "169.254.0.0/16", "10.0.0.0/8"},
			"allowHosts":   []any{"flags.example.com", "*.status.example.com"},
			"maxBodyBytes": 4096,
		},
		"controller":       map[string]any{"maxConcurrentReconciles": 100, "stateMaxConcurrentReconciles": 20},
		"kubeAPI":          map[string]any{"qps": 500, "burst": 1000},
		"logging":          map[string]any{"level": "debug"},
		"nodeSelector":     map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":      []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "ops", "effect": "NoSchedule"}},
		"resources":        map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "128Mi"}, "limits": map[string]any{"memory": "1Gi"}},
		"imagePullSecrets": []any{map[string]any{"name": "regcred"}},
		"extraArgs":        []any{"--zap-devel=false"},
		"extraEnv": []any{
			map[string]any{"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"},
			map[string]any{"name": "GOMEMLIMIT", "valueFrom": map[string]any{"resourceFieldRef": map[string]any{"resource": "limits.memory"}}},
		},
		"commonLabels":         map[string]any{"team": "platform", "app.kubernetes.io/name": "ignored"},
		"revisionHistoryLimit": 3,
	}
}

func TestCustomValues(t *testing.T) {
	const release, namespace = "ops", "platform"
	vals := customValues()
	objs := renderChart(t, release, namespace, vals)
	checkWiring(t, objs, namespace)

	got := kinds(objs)
	for _, kind := range []string{"CustomResourceDefinition", "Issuer", "Certificate"} {
		if got[kind] != 0 {
			t.Errorf("%d objects of kind %s; the values turn them off", got[kind], kind)
		}
	}
	for _, kind := range []string{"ServiceMonitor", "PodDisruptionBudget", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		if got[kind] != 1 {
			t.Errorf("%d objects of kind %s, want 1", got[kind], kind)
		}
	}
	for _, o := range objs {
		if !strings.HasPrefix(o.GetName(), release+"-dynamic-ingress-operator-") {
			t.Errorf("%s %s: want a name starting with the release and chart names", o.GetKind(), o.GetName())
		}
	}

	deploy := suite.Only[appsv1.Deployment](t, objs, "Deployment")
	pod := deploy.Spec.Template.Spec
	manager := managerContainer(t, deploy)
	if r := ptr.Deref(deploy.Spec.Replicas, 1); r != 3 {
		t.Errorf("replicas %d, want 3", r)
	}
	if r := ptr.Deref(deploy.Spec.RevisionHistoryLimit, -1); r != 3 {
		t.Errorf("revisionHistoryLimit %d, want 3", r)
	}
	wantEnv := []corev1.EnvVar{
		{Name: "HTTPS_PROXY", Value: "http://proxy.example.com:3128"},
		{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
	}
	if diff := cmp.Diff(wantEnv, manager.Env); diff != "" {
		t.Errorf("manager env (-want +got):\n%s", diff)
	}
	// commonLabels on every object and the pods; the chart's own labels
	// keep their values.
	for _, o := range append(objs, &unstructured.Unstructured{Object: map[string]any{"kind": "pod template", "metadata": map[string]any{"labels": toAny(deploy.Spec.Template.Labels)}}}) {
		if l := o.GetLabels(); l["team"] != "platform" || l["app.kubernetes.io/name"] != "dynamic-ingress-operator" {
			t.Errorf("%s %s labels %v, want team=platform and app.kubernetes.io/name=dynamic-ingress-operator", o.GetKind(), o.GetName(), l)
		}
	}
	if manager.Image != "registry.example.com/dio:v9.9.9" || manager.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %s pull policy %s, want registry.example.com/dio:v9.9.9 Always", manager.Image, manager.ImagePullPolicy)
	}
	for _, want := range []string{
		"--probe-deny-cidrs=127.0.0.0/8,169.254.0.0/16,10.0.0.0/8",
		"--probe-allow-hosts=flags.example.com,*.status.example.com",
		"--probe-max-body-bytes=4096",
		"--max-concurrent-reconciles=100",
		"--state-max-concurrent-reconciles=20",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--zap-log-level=debug",
		"--leader-elect=true",
		"--zap-devel=false",
	} {
		if !slices.Contains(manager.Args, want) {
			t.Errorf("manager args %v: want %s", manager.Args, want)
		}
	}
	if pod.NodeSelector["kubernetes.io/os"] != "linux" || len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "dedicated" {
		t.Errorf("nodeSelector %v tolerations %v, want the values'", pod.NodeSelector, pod.Tolerations)
	}
	if len(pod.ImagePullSecrets) != 1 || pod.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("imagePullSecrets %v, want regcred", pod.ImagePullSecrets)
	}
	if manager.Resources.Limits.Memory().String() != "1Gi" || manager.Resources.Requests.Cpu().String() != "200m" {
		t.Errorf("resources %v, want the values'", manager.Resources)
	}

	// The user's own certificate: their Secret is mounted, their CA is in
	// every webhook, and nothing asks cert-manager for anything.
	flags := effectiveFlags(t, manager.Args)
	if got := secretMountedAt(t, deploy, flags["webhook-cert-path"]); got != "dio-webhook-tls" {
		t.Errorf("the manager has Secret %q at --webhook-cert-path, want webhook.existingSecret dio-webhook-tls", got)
	}
	ca, _ := base64.StdEncoding.DecodeString(vals["webhook"].(map[string]any)["caBundle"].(string))
	hooks := webhookClientConfigs(t, objs)
	if len(hooks) == 0 {
		t.Fatal("no webhooks")
	}
	for name, cc := range hooks {
		if string(cc.CABundle) != string(ca) {
			t.Errorf("webhook %s caBundle %q, want webhook.caBundle", name, cc.CABundle)
		}
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		if a := suite.Only[unstructured.Unstructured](t, objs, kind).GetAnnotations(); a["cert-manager.io/inject-ca-from"] != "" {
			t.Errorf("%s asks cert-manager to inject a CA: %v", kind, a)
		}
	}

	// The ServiceMonitor scrapes the metrics Service, and only it, the way
	// the manager serves it.
	monitor := suite.Only[unstructured.Unstructured](t, objs, "ServiceMonitor")
	if monitor.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels %v, want metrics.serviceMonitor.labels", monitor.GetLabels())
	}
	sel, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	var selected []string
	for _, o := range suite.Find(objs, "Service") {
		if o.GetNamespace() == monitor.GetNamespace() && labels.SelectorFromSet(sel).Matches(labels.Set(o.GetLabels())) {
			selected = append(selected, o.GetName())
		}
	}
	if want := []string{release + "-dynamic-ingress-operator-controller-manager-metrics-service"}; !slices.Equal(selected, want) || len(sel) == 0 {
		t.Errorf("the ServiceMonitor selects Services %v, want %v", selected, want)
	}
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", endpoints)
	}
	ep := endpoints[0].(map[string]any)
	metricsSvc := suite.Named[corev1.Service](t, objs, "Service", selected[0])
	if ep["port"] != metricsSvc.Spec.Ports[0].Name || ep["scheme"] != "https" || ep["interval"] != "30s" ||
		ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("ServiceMonitor endpoint %v, want https on port %s every 30s with Prometheus's token", ep, metricsSvc.Spec.Ports[0].Name)
	}
}

// TestValuesTurnThingsOff checks the objects that values remove, and that
// what remains still fits together.
func TestValuesTurnThingsOff(t *testing.T) {
	tests := []struct {
		name    string
		values  map[string]any
		absent  []string
		present []string
		check   func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{
			name:    "one replica has no PodDisruptionBudget",
			values:  map[string]any{"replicaCount": 1},
			absent:  []string{"PodDisruptionBudget"},
			present: []string{"Deployment"},
		},
		{
			name:   "no metrics",
			values: map[string]any{"metrics": map[string]any{"enabled": false, "serviceMonitor": map[string]any{"enabled": true}}},
			absent: []string{"ServiceMonitor"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if n := len(suite.Find(objs, "Service")); n != 1 {
					t.Errorf("%d Services, want the webhook one only", n)
				}
				for _, o := range suite.Find(objs, "ClusterRole") {
					if strings.Contains(o.GetName(), "metrics") {
						t.Errorf("ClusterRole %s with metrics off", o.GetName())
					}
				}
				args := managerContainer(t, suite.Only[appsv1.Deployment](t, objs, "Deployment")).Args
				if effectiveFlags(t, args)["metrics-bind-address"] != "0" {
					t.Errorf("args %v: want --metrics-bind-address=0", args)
				}
			},
		},
		{
			name:   "no webhooks",
			values: map[string]any{"webhook": map[string]any{"enabled": false}},
			absent: []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Issuer", "Certificate"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				deploy := suite.Only[appsv1.Deployment](t, objs, "Deployment")
				if effectiveFlags(t, managerContainer(t, deploy).Args)["enable-webhooks"] != "false" {
					t.Errorf("args %v: want --enable-webhooks=false", managerContainer(t, deploy).Args)
				}
				if len(deploy.Spec.Template.Spec.Volumes) != 0 {
					t.Errorf("volumes %v with webhooks off", deploy.Spec.Template.Spec.Volumes)
				}
			},
		},
		{
			name:   "no CRDs, RBAC or ServiceAccount",
			values: map[string]any{"crds": map[string]any{"install": false}, "rbac": map[string]any{"create": false, "userRoles": false}, "serviceAccount": map[string]any{"create": false, "name": "platform-sa"}},
			absent: []string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if sa := suite.Only[appsv1.Deployment](t, objs, "Deployment").Spec.Template.Spec.ServiceAccountName; sa != "platform-sa" {
					t.Errorf("serviceAccountName %q, want platform-sa", sa)
				}
			},
		},
		{
			name:    "CRDs not kept",
			values:  map[string]any{"crds": map[string]any{"keep": false}},
			present: []string{"CustomResourceDefinition"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for _, o := range suite.Find(objs, "CustomResourceDefinition") {
					if _, ok := o.GetAnnotations()["helm.sh/resource-policy"]; ok {
						t.Errorf("CRD %s keeps helm.sh/resource-policy with crds.keep=false", o.GetName())
					}
				}
			},
		},
		{
			name:    "cert-manager with the user's issuer",
			values:  map[string]any{"webhook": map[string]any{"certManager": map[string]any{"issuerRef": map[string]any{"kind": "ClusterIssuer", "name": "corp-ca"}}}},
			absent:  []string{"Issuer"},
			present: []string{"Certificate"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if ref := suite.Only[certmanagerv1.Certificate](t, objs, "Certificate").Spec.IssuerRef; ref.Kind != "ClusterIssuer" || ref.Name != "corp-ca" {
					t.Errorf("issuerRef %+v, want ClusterIssuer corp-ca", ref)
				}
			},
		},
		{
			name:   "no anti-affinity, the user's affinity",
			values: map[string]any{"podAntiAffinityPreset": "", "affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"ops"}}}}}}}}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				a := suite.Only[appsv1.Deployment](t, objs, "Deployment").Spec.Template.Spec.Affinity
				if a == nil || a.NodeAffinity == nil || a.PodAntiAffinity != nil {
					t.Errorf("affinity %+v, want exactly the values' node affinity", a)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := renderChart(t, bundleRelease, bundleNamespace, tt.values)
			checkWiring(t, objs, bundleNamespace)
			got := kinds(objs)
			for _, kind := range tt.absent {
				if got[kind] != 0 {
					t.Errorf("%d objects of kind %s, want none", got[kind], kind)
				}
			}
			for _, kind := range tt.present {
				if got[kind] == 0 {
					t.Errorf("no object of kind %s", kind)
				}
			}
			if tt.check != nil {
				tt.check(t, objs)
			}
		})
	}
}

// TestValuesThatCannotWorkAreRefused checks that helm install refuses,
// with a message naming the value, what would install a broken operator.
func TestValuesThatCannotWorkAreRefused(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no cert-manager and no Secret", map[string]any{"webhook": map[string]any{"certManager": map[string]any{"enabled": false}, "caBundle": "Zm9v"}}, "webhook.existingSecret"},
		{"no cert-manager and no CA", map[string]any{"webhook": map[string]any{"certManager": map[string]any{"enabled": false}, "existingSecret": "tls"}}, "webhook.caBundle"},
		{"two replicas without leader election", map[string]any{"leaderElection": map[string]any{"enabled": false}}, "leaderElection.enabled"},
		{"an existing ServiceAccount without a name", map[string]any{"serviceAccount": map[string]any{"create": false}}, "serviceAccount.name"},
		{"a misspelt value", map[string]any{"replicas": 3}, "replicas"},
		{"a value of the wrong type", map[string]any{"probes": map[string]any{"denyCIDRs": "127.0.0.0/8"}}, "denyCIDRs"},
		{"an unknown anti-affinity preset", map[string]any{"podAntiAffinityPreset": "spread"}, "podAntiAffinityPreset"},
		{"a QPS that is no number", map[string]any{"kubeAPI": map[string]any{"qps": "fast"}}, "qps"},
		// The manager would refuse to start with these (cmd/flags.go).
		{"a body longer than a state's status holds", map[string]any{"probes": map[string]any{"maxBodyBytes": 65537}}, "maxBodyBytes"},
		{"no state workers", map[string]any{"controller": map[string]any{"stateMaxConcurrentReconciles": 0}}, "stateMaxConcurrentReconciles"},
		{"too many state workers", map[string]any{"controller": map[string]any{"stateMaxConcurrentReconciles": 257}}, "stateMaxConcurrentReconciles"},
		{"a digest that is not sha256:<64 hex>", map[string]any{"image": map[string]any{"digest": "latest"}}, "digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tryRender(t, bundleRelease, bundleNamespace, tt.values)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("rendering with %v: error %v, want one naming %s", tt.values, err, tt.want)
			}
		})
	}
}

// TestImageDigest checks that a digest pins the image after its tag, as a
// release's chart and install.yaml name it (repository:tag@digest): the
// runtime pulls by the digest, the tag still says the version.
func TestImageDigest(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	appVersion := loadChart(t).Metadata.AppVersion
	for _, tt := range []struct {
		name  string
		image map[string]any
		want  string
	}{
		{"the tag alone", map[string]any{"repository": "registry.example.com/dio", "tag": "9.9.9"}, "registry.example.com/dio:9.9.9"},
		{"a digest after the appVersion", map[string]any{"repository": "registry.example.com/dio", "digest": digest}, "registry.example.com/dio:" + appVersion + "@" + digest},
		{"a digest after the tag", map[string]any{"repository": "registry.example.com/dio", "tag": "9.9.9", "digest": digest}, "registry.example.com/dio:9.9.9@" + digest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs := renderChart(t, bundleRelease, bundleNamespace, map[string]any{"image": tt.image})
			manager := managerContainer(t, suite.Only[appsv1.Deployment](t, objs, "Deployment"))
			if manager.Image != tt.want {
				t.Errorf("image %q, want %q", manager.Image, tt.want)
			}
		})
	}
}

// TestNoCertManagerStopsTheInstall renders the chart for a cluster without
// cert-manager's API: with the default values helm install stops with a
// message saying what to install; with the user's own certificate it
// renders, and asks nothing of cert-manager.
func TestNoCertManagerStopsTheInstall(t *testing.T) {
	_, err := bundle.TryRenderChartFor(t, nil, bundleRelease, bundleNamespace, nil)
	for _, want := range []string{"cert-manager.io/v1", "install cert-manager", "webhook.certManager.enabled=false", "webhook.existingSecret"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rendering without cert-manager's API: error %v, want one saying %q", err, want)
		}
	}

	own := map[string]any{"webhook": customValues()["webhook"]}
	objs, err := bundle.TryRenderChartFor(t, nil, bundleRelease, bundleNamespace, own)
	if err != nil {
		t.Fatalf("rendering without cert-manager's API, with the user's own certificate: %v", err)
	}
	for _, o := range objs {
		if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
			t.Errorf("%s %s rendered without cert-manager's API", o.GetKind(), o.GetName())
		}
	}
}

// readTemplate returns one template's text.
func readTemplate(t *testing.T, name string) string {
	t.Helper()
	ch := loadChart(t)
	for _, f := range ch.Templates {
		if f.Name == "templates/"+name {
			return string(f.Data)
		}
	}
	t.Fatalf("no template %s in %v", name, ch.TemplateNames())
	return ""
}
