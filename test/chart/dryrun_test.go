package chart_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// TestRenderingsDryRunApply applies, with a server-side dry run, the
// chart's default rendering and its custom one (TestCustomValues: its own
// certificate, a ServiceMonitor, no CRDs) to an API server that has
// cert-manager's and prometheus-operator's CRDs: the API server accepts
// every object, with its own validation and defaulting.
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
	}{
		{"default values", bundleRelease, bundleNamespace, renderDefault(t)},
		{"custom values", "ops", "platform", renderChart(t, "ops", "platform", customValues())},
	}
	for _, r := range renderings {
		// The release namespace and the CRDs for real first: a dry run
		// does not create what the other objects need to exist.
		ns := &corev1.Namespace{}
		ns.Name = r.namespace
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		for _, o := range suite.Find(r.objs, "CustomResourceDefinition") {
			if err := c.Create(ctx, o.DeepCopy()); err != nil {
				t.Fatalf("creating CRD %s: %v", o.GetName(), err)
			}
		}
	}
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
