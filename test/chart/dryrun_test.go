package chart_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// TestRenderingsDryRunApply applies, with a server-side dry run, the
// chart's default rendering, its custom one (TestCustomValues: its own
// certificate, a ServiceMonitor, no CRDs) and a namespaced one that follows
// cluster states (Roles in default and in the cluster resource namespace)
// to an API server that has cert-manager's and prometheus-operator's CRDs:
// the API server accepts every object, with its own validation and
// defaulting.
func TestRenderingsDryRunApply(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{bundle.CertManagerCRDDir(t), bundle.ServiceMonitorCRDFile(t)},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: controlplane.AssetsDir(),
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd from %s (make envtest-assets builds them): %v", controlplane.AssetsDir(), err)
	}
	defer func() { _ = env.Stop() }()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	renderings := []struct {
		name, release, namespace string
		objs                     []*unstructured.Unstructured
		// more namespaces the rendering's objects are in
		more []string
	}{
		{"default values", bundleRelease, bundleNamespace, renderDefault(t), nil},
		{"custom values", "ops", "platform", renderChart(t, "ops", "platform", customValues()), nil},
		{"namespaced, following cluster states", "team", "team-ops", renderChart(t, "team", "team-ops", map[string]any{
			"crds":            map[string]any{"install": false},
			"watchNamespaces": []any{"team-a"},
			"clusterStates":   map[string]any{"followInNamespacedMode": true, "resourceNamespace": "team-secrets"},
		}), []string{"team-a", "team-secrets"}},
	}
	for _, r := range renderings {
		// The namespaces and the CRDs for real first: a dry run does not
		// create what the other objects need to exist.
		for _, name := range append([]string{r.namespace}, r.more...) {
			ns := &corev1.Namespace{}
			ns.Name = name
			if err := c.Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range suite.Find(r.objs, "CustomResourceDefinition") {
			if err := c.Create(ctx, o.DeepCopy()); err != nil {
				t.Fatalf("creating CRD %s: %v", o.GetName(), err)
			}
		}
	}
	t.Run("Pod Security restricted", func(t *testing.T) {
		checkPodSecurityRestricted(t, cfg, c)
	})
	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			if len(r.objs) == 0 {
				t.Fatal("nothing rendered")
			}
			for _, o := range r.objs {
				if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("helm"), client.DryRunAll, client.ForceOwnership); err != nil {
					t.Errorf("server-side dry-run apply of %s: %v", objectKey(o), err)
				}
			}
		})
	}
}

// warningCollector keeps the warnings the API server sends.
type warningCollector struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningCollector) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// checkPodSecurityRestricted checks the manager's pod against the
// restricted Pod Security Standard with the API server's own PodSecurity
// admission (on by default in kube-apiserver; envtest turns off only
// ServiceAccount admission), in a namespace labelled
// pod-security.kubernetes.io/enforce=restricted: a server-side dry run of
// a Pod made from the Deployment's template is admitted, and one of the
// Deployment draws no Pod Security warning (the admission only warns about
// workloads; it refuses Pods). A template without allowPrivilegeEscalation:
// false is refused, which shows the admission is there to refuse.
func checkPodSecurityRestricted(t *testing.T, cfg *rest.Config, c client.Client) {
	ctx := context.Background()
	const namespace = "pod-security-restricted"
	ns := &corev1.Namespace{}
	ns.Name = namespace
	ns.Labels = map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/warn":            "restricted",
		"pod-security.kubernetes.io/warn-version":    "latest",
	}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	warnings := &warningCollector{}
	wcfg := rest.CopyConfig(cfg)
	wcfg.WarningHandlerWithContext = warnings
	wc, err := client.New(wcfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}

	podOf := func(deploy *appsv1.Deployment) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: deploy.Spec.Template.ObjectMeta, Spec: deploy.Spec.Template.Spec}
		pod.Name, pod.Namespace = "manager", namespace
		return pod
	}
	deploy := suite.Only[appsv1.Deployment](t, renderChart(t, bundleRelease, namespace, nil), "Deployment")
	if err := wc.Create(ctx, podOf(deploy), client.DryRunAll); err != nil {
		t.Errorf("the manager's pod, in a namespace that enforces the restricted Pod Security Standard: %v", err)
	}
	if err := wc.Create(ctx, deploy, client.DryRunAll); err != nil {
		t.Errorf("the manager's Deployment: %v", err)
	}
	warnings.mu.Lock()
	for _, w := range warnings.warnings {
		t.Errorf("the API server warned: %s", w)
	}
	warnings.mu.Unlock()

	// helm drops a value set to null: the chart's default without it.
	loose := renderChart(t, bundleRelease, namespace, map[string]any{"securityContext": map[string]any{"allowPrivilegeEscalation": nil}})
	err = wc.Create(ctx, podOf(suite.Only[appsv1.Deployment](t, loose, "Deployment")), client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "allowPrivilegeEscalation") {
		t.Errorf("a pod without allowPrivilegeEscalation: false: error %v, want Pod Security admission to refuse it", err)
	} else {
		t.Logf("a pod without allowPrivilegeEscalation: false is refused: %v", err)
	}
}
