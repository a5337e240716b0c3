package controlplane

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestClusterGarbageCollects starts a local cluster and checks what the demo
// and the e2e suite rely on: the kubeconfig works and deleting an owner
// deletes what it owns.
func TestClusterGarbageCollects(t *testing.T) {
	c, err := Start(Options{Dir: t.TempDir(), GarbageCollector: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitForGarbageCollector(ctx); err != nil {
		t.Fatal(err)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", c.Kubeconfig, err)
	}
	k, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owner"}}
	if err := k.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owned",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}}}
	if err := k.Create(ctx, owned); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	for {
		err := k.Get(ctx, client.ObjectKeyFromObject(owned), owned)
		if apierrors.IsNotFound(err) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the owned ConfigMap still exists a minute after its owner was deleted (last error: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
