package v1beta1_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// The served URL and sink of these tests name localhost on a port nothing
// serves: the manager's address guard (loopback denied) refuses the
// connection before anything is sent.
const (
	permissionServedURL = "http://localhost:1/healthz"
	permissionSinkURL   = "http://localhost:1/hooks"
)

// TestRequestsNeedStatePermission: spec.served on either switch kind and
// spec.sink on a notifier, set or changed, are refused at admission for a
// user bound to the operator's editor roles of the switches and notifiers
// (aggregated into the built-in edit role) but not to the state editor
// role, with the message at the field path; the same user may change
// anything else of such an object; a user who may create
// DynamicIngressStates in the namespace is accepted (docs/security.md).
func TestRequestsNeedStatePermission(t *testing.T) {
	ns := newNamespace(t)
	applyEditorRoles(t)
	editor := userClient(t, ns, "edit-only", "dynamicingress-editor", "dynamichttproute-editor", "dynamicingressnotifier-editor")
	lead := userClient(t, ns, "state-author", "dynamicingress-editor", "dynamichttproute-editor", "dynamicingressnotifier-editor", "dynamicingressstate-editor")

	servedRefusal := `spec.served: Forbidden: a served check makes the manager send requests; it needs permission to create dynamicingressstates in namespace "` + ns + `"`
	sinkRefusal := `spec.sink: Forbidden: a notification sink makes the manager send requests; it needs permission to create dynamicingressstates in namespace "` + ns + `"`
	served := func() *builders.ServedWrapper { return builders.Served(permissionServedURL, "503", "200") }
	ingress := func(name string) *builders.DynamicIngressWrapper {
		return builders.DynamicIngress(ns, name).State("absent").ExpectCode("503").
			Passive(builders.IngressTo(name+".example.com", "web")).Active(builders.IngressTo(name+".example.com", "sorry"))
	}

	// Create with spec.served, on both kinds.
	refused(t, "create di/editor-served", editor.Create(ctx, ingress("editor-served").Served(served()).Obj()), "DynamicIngress", servedRefusal)
	route := builders.DynamicHTTPRoute(ns, "editor-route").State("absent").ExpectCode("503").
		Passive(builders.RouteTo("route.example.com", "web")).Active(builders.RedirectTo("route.example.com", "status.example.com")).
		Served(served()).Obj()
	refused(t, "create dhr/editor-route", editor.Create(ctx, route), "DynamicHTTPRoute", servedRefusal)

	// Add spec.served to a switch the editor made without it.
	plain := ingress("editor-plain").Obj()
	if err := editor.Create(ctx, plain); err != nil {
		t.Fatalf("the editor's create of a switch without spec.served: %v", err)
	}
	refused(t, "adding spec.served", update(editor, plain, func(di *v1beta1.DynamicIngress) { di.Spec.Served = served().Obj() }), "DynamicIngress", servedRefusal)

	// A switch with spec.served, made by the lead.
	checked := ingress("checked").Served(served()).Obj()
	if err := lead.Create(ctx, checked); err != nil {
		t.Fatalf("the state author's create of a switch with spec.served: %v", err)
	}
	refused(t, "changing spec.served.url", update(editor, checked, func(di *v1beta1.DynamicIngress) {
		di.Spec.Served.URL = "http://localhost:1/other"
	}), "DynamicIngress", servedRefusal)
	refused(t, "adding a spec.served header", update(editor, checked, func(di *v1beta1.DynamicIngress) {
		di.Spec.Served.Headers = append(di.Spec.Served.Headers, v1beta1.HTTPHeader{Name: "X-Probe", Value: "1"})
	}), "DynamicIngress", servedRefusal)
	refused(t, "changing spec.served.active", update(editor, checked, func(di *v1beta1.DynamicIngress) {
		di.Spec.Served.Active = v1beta1.ExpectedResponse{Expression: `response.body.contains("sorry")`}
	}), "DynamicIngress", servedRefusal)
	if err := update(editor, checked, func(di *v1beta1.DynamicIngress) {
		di.Spec.ActiveIngress = builders.IngressTo("checked.example.com", "maintenance").Obj()
	}); err != nil {
		t.Errorf("the editor's change of a template of a switch with spec.served: %v", err)
	}
	if err := update(editor, checked, func(di *v1beta1.DynamicIngress) { di.Spec.Served = nil }); err != nil {
		t.Errorf("the editor's removal of spec.served: %v", err)
	}
	if err := update(lead, checked, func(di *v1beta1.DynamicIngress) { di.Spec.Served = served().Obj() }); err != nil {
		t.Errorf("the state author's setting of spec.served: %v", err)
	}
	route.Name = "lead-route"
	route.ResourceVersion = ""
	if err := lead.Create(ctx, route); err != nil {
		t.Errorf("the state author's create of a DynamicHTTPRoute with spec.served: %v", err)
	}

	// Notifiers.
	notifier := func(name string) *v1beta1.DynamicIngressNotifier {
		return builders.Notifier(ns, name, permissionSinkURL).State("absent").Obj()
	}
	refused(t, "create dnotify/editor", editor.Create(ctx, notifier("editor")), "DynamicIngressNotifier", sinkRefusal)
	oncall := notifier("oncall")
	if err := lead.Create(ctx, oncall); err != nil {
		t.Fatalf("the state author's create of a notifier: %v", err)
	}
	refused(t, "changing spec.sink.url", update(editor, oncall, func(n *v1beta1.DynamicIngressNotifier) {
		n.Spec.Sink.URL = "http://localhost:1/elsewhere"
	}), "DynamicIngressNotifier", sinkRefusal)
	refused(t, "changing spec.sink.format", update(editor, oncall, func(n *v1beta1.DynamicIngressNotifier) {
		n.Spec.Sink.Format = v1beta1.SinkFormatSlack
	}), "DynamicIngressNotifier", sinkRefusal)
	if err := update(editor, oncall, func(n *v1beta1.DynamicIngressNotifier) {
		n.Spec.States = append(n.Spec.States, v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "other"})
	}); err != nil {
		t.Errorf("the editor's change of a notifier's states: %v", err)
	}
	if err := update(lead, oncall, func(n *v1beta1.DynamicIngressNotifier) { n.Spec.Sink.URL = "http://localhost:1/elsewhere" }); err != nil {
		t.Errorf("the state author's change of spec.sink.url: %v", err)
	}
}

// refused fails the test unless err is an Invalid status for kind whose
// message holds want (kubectl prints `The <Kind> "<name>" is invalid:
// <want>`).
func refused(t *testing.T, what string, err error, kind, want string) {
	t.Helper()
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil || status.Status().Details.Kind != kind {
		t.Errorf("%s: want an Invalid status of a %s, got %v", what, kind, err)
		return
	}
	if !strings.Contains(err.Error(), " is invalid: "+want) {
		t.Errorf("%s:\n  %v\nwant it to end in:\n  is invalid: %s", what, err, want)
	}
}

// update reads obj, changes it and patches it with c (a merge patch: the
// controller writes the status meanwhile); obj ends as written (or as
// changed, when the patch is refused).
func update[T client.Object](c client.Client, obj T, change func(T)) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return err
	}
	before := obj.DeepCopyObject().(client.Object)
	change(obj)
	return c.Patch(ctx, obj, client.MergeFrom(before))
}

// applyEditorRoles creates the operator's editor ClusterRoles of
// config/rbac, and its override-approver role, in the control plane, once
// per run.
func applyEditorRoles(t *testing.T) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), "config", "rbac", "*_editor_role.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("config/rbac/*_editor_role.yaml: %v, %d files", err, len(files))
	}
	files = append(files, filepath.Join(controlplane.RepoRoot(), "config", "rbac", "override_approver_role.yaml"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		role := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict(raw, role); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := k8s.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// userClient is a client of the user name, bound in ns to each ClusterRole
// of roles, once the API server's authorizer lets it do what the last role
// grants (list what it names).
func userClient(t *testing.T, ns, name string, roles ...string) client.Client {
	t.Helper()
	for _, role := range roles {
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: name}},
		}
		if err := k8s.Create(ctx, binding); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	lists := map[string]client.ObjectList{
		"dynamicingressnotifier-editor": &v1beta1.DynamicIngressNotifierList{},
		"dynamicingressstate-editor":    &v1beta1.DynamicIngressStateList{},
		"dynamicingress-editor":         &v1beta1.DynamicIngressList{},
		"dynamichttproute-editor":       &v1beta1.DynamicHTTPRouteList{},
		"override-approver":             &v1beta1.DynamicIngressList{},
	}
	last, ok := lists[roles[len(roles)-1]]
	if !ok {
		t.Fatalf("userClient: no list to wait for with %s", roles[len(roles)-1])
	}
	eventually(t, func() error { return c.List(ctx, last, client.InNamespace(ns)) }).Should(Succeed())
	return c
}
