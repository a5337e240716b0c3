// Package suite holds what the project's test suites share and shipped
// code must not link: helpers that take a testing.TB or use gomega.
package suite

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// NameOf is an object name made of the test's name: lower case, '-' for
// '/' and '_', at most 50 characters. Cluster-scoped objects, which no
// test namespace keeps apart, take it as their own.
func NameOf(t testing.TB) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	return strings.TrimSuffix(name, "-")
}

// NewNamespace creates a namespace of its own for one test, named after it.
func NewNamespace(t testing.TB, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{}
	ns.GenerateName = NameOf(t) + "-"
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// Eventually is gomega's Eventually with the timeouts of this project's
// suites: 20s, polling every 50ms.
func Eventually(t testing.TB, f any) gomega.AsyncAssertion {
	t.Helper()
	return gomega.NewWithT(t).Eventually(f).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond)
}

// SetTestLogger sends controller-runtime's logs nowhere, or to stderr when
// TEST_VERBOSE is set.
func SetTestLogger() {
	logs := io.Discard
	if os.Getenv("TEST_VERBOSE") != "" {
		logs = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))
}
