package workers

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestReconcileLoggerCarriesPlainStrings: the logger of a reconcile names
// the controller and the object with plain string values, which zap
// encodes cheaply, not a klog object reference.
func TestReconcileLoggerCarriesPlainStrings(t *testing.T) {
	var lines []string
	base := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
	constructor := loggerFor(base, "dynamicingress", "DynamicIngress")
	constructor(&reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "web"}}).Info("Created Ingress")
	constructor(nil).Info("Starting")
	want := []string{
		`"level"=0 "msg"="Created Ingress" "controller"="dynamicingress" "controllerGroup"="ingress.dynamicingress.io" "controllerKind"="DynamicIngress" "namespace"="shop" "name"="web"`,
		`"level"=0 "msg"="Starting" "controller"="dynamicingress" "controllerGroup"="ingress.dynamicingress.io" "controllerKind"="DynamicIngress"`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
