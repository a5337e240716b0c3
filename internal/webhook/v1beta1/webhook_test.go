package v1beta1_test

import (
	"errors"
	"k8s.io/utils/ptr"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestRejections sends bad objects through the API server and asserts what
// kubectl would print, and that nothing was created.
func TestRejections(t *testing.T) {
	ns := newNamespace(t)
	taken := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}, Spec: builders.IngressTo("t.example.com", "x").Template.Spec}
	if err := k8s.Create(ctx, taken); err != nil {
		t.Fatal(err)
	}
	// A DynamicIngress that names target "shared" (in a mode without an
	// Ingress, so only the DynamicIngress stands for it), and is in the
	// manager's cache once the controller has reported on it.
	first := builders.DynamicIngress(ns, "first").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("first.example.com", "web")).
		Active(builders.IngressTo("first.example.com", "sorry")).Obj()
	first.Spec.Target.Name = "shared"
	first.Spec.PassiveIngress = nil
	if err := k8s.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() int {
		_ = k8s.Get(ctx, client.ObjectKeyFromObject(first), first)
		return len(first.Status.Conditions)
	}).ShouldNot(BeZero())
	tests := []struct {
		name string
		obj  client.Object
		// field is the path of the cause, msg what kubectl prints after it.
		field, msg string
	}{
		{
			name: "target already exists",
			obj: builders.DynamicIngress(ns, "taken").State("flag").ExpectCode("200").
				Passive(builders.IngressTo("taken.example.com", "web")).
				Active(builders.IngressTo("taken.example.com", "sorry")).Obj(),
			field: "spec.target", msg: `Invalid value: "` + ns + `/taken": Ingress ` + ns + `/taken already exists`,
		},
		{
			name: "target named by another DynamicIngress",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "second").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("second.example.com", "web")).
					Active(builders.IngressTo("second.example.com", "sorry")).Obj()
				di.Spec.Target.Name = "shared"
				return di
			}(),
			field: "spec.target", msg: `Invalid value: "` + ns + `/shared": DynamicIngress "first" already targets Ingress ` + ns + `/shared; each Ingress has at most one DynamicIngress`,
		},
		{
			name: "target in another namespace",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "elsewhere").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("elsewhere.example.com", "web")).
					Active(builders.IngressTo("elsewhere.example.com", "sorry")).Obj()
				di.Spec.Target.Namespace = "default"
				return di
			}(),
			field: "spec.target.namespace", msg: `Forbidden: must be the DynamicIngress's own namespace "` + ns + `", not "default"`,
		},
		{
			name: "template the API server rejects as an Ingress",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "bad-path").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("bad-path.example.com", "web")).
					Active(builders.IngressTo("bad-path.example.com", "sorry")).Obj()
				di.Spec.ActiveIngress = builders.IngressTo("b.example.com", "sorry").Path("sorry-page").Obj()
				return di
			}(),
			field: "spec.activeIngress.template.spec.rules[0].http.paths[0].path", msg: `Invalid value: "sorry-page": must be an absolute path`,
		},
		{
			name: "template with neither rules nor default backend",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "empty-tpl").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("empty-tpl.example.com", "web")).
					Active(builders.IngressTo("empty-tpl.example.com", "sorry")).Obj()
				di.Spec.PassiveIngress = &v1beta1.IngressVariant{}
				return di
			}(),
			field: "spec.passiveIngress.template.spec", msg: "Invalid value: null: either `defaultBackend` or `rules` must be specified",
		},
		{
			name: "template with a bad annotation name",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "bad-annotation").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("bad-annotation.example.com", "web")).
					Active(builders.IngressTo("bad-annotation.example.com", "sorry")).Obj()
				di.Spec.ActiveIngress.Template.Metadata.Annotations = map[string]string{"not valid/": "x"}
				return di
			}(),
			field: "spec.activeIngress.template.metadata.annotations", msg: `Invalid value: "not valid/"`,
		},
		{
			name: "both templates null",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "no-templates").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("no-templates.example.com", "web")).
					Active(builders.IngressTo("no-templates.example.com", "sorry")).Obj()
				di.Spec.PassiveIngress, di.Spec.ActiveIngress = nil, nil
				return di
			}(),
			field: "spec", msg: "Invalid value: at least one of passiveIngress and activeIngress must be set",
		},
		{
			// An empty expected is left out of the request (omitzero), as
			// kubectl leaves out an absent one: the CRD's rule on spec
			// answers.
			name: "no expected",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "no-expected").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("no-expected.example.com", "web")).
					Active(builders.IngressTo("no-expected.example.com", "sorry")).Obj()
				di.Spec.Expected = v1beta1.ExpectedResponse{}
				return di
			}(),
			field: "spec", msg: "Invalid value: expected is required with state or stateRef",
		},
		{
			name: "status code 700",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "bad-code").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("bad-code.example.com", "web")).
					Active(builders.IngressTo("bad-code.example.com", "sorry")).Obj()
				di.Spec.Expected.StatusCode = "700"
				return di
			}(),
			field: "spec.expected.statusCode", msg: `Invalid value: "700": must be an HTTP status code: three digits from 100 to 599`,
		},
		{
			name:  "probe URL not http(s)",
			obj:   builders.ProbedState(ns, "ftp", "ftp://flags.example.com/killswitch").Obj(),
			field: "spec.probe.url", msg: `Invalid value: must be an absolute http or https URL with a host`,
		},
		{
			name:  "probe URL on a denied literal address",
			obj:   builders.ProbedState(ns, "metadata", "http://169.254.169.254/latest/meta-data/").Obj(),
			field: "spec.probe.url", msg: `Invalid value: "http://169.254.169.254/latest/meta-data/": address 169.254.169.254 is inside denied range 169.254.0.0/16 (the manager's --probe-deny-cidrs)`,
		},
		{
			name: "probe timeout over interval",
			obj: func() client.Object {
				s := builders.ProbedState(ns, "slow", "https://flags.example.com/x").Obj()
				s.Spec.Probe.Interval = &metav1.Duration{Duration: 2 * time.Second}
				s.Spec.Probe.Timeout = &metav1.Duration{Duration: 3 * time.Second}
				return s
			}(),
			field: "spec.probe.timeout", msg: "Invalid value: must not be longer than the interval",
		},
		{
			name: "expression that does not compile",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "bad-cel").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("bad-cel.example.com", "web")).
					Active(builders.IngressTo("bad-cel.example.com", "sorry")).Obj()
				di.Spec.Expected = v1beta1.ExpectedResponse{Expression: "response.json.enabled =="}
				return di
			}(),
			field: "spec.expected.expression", msg: `Invalid value: "response.json.enabled ==": compilation failed: ERROR: <input>:1:25: Syntax error: mismatched input '<EOF>'`,
		},
		{
			name: "expression of the wrong type",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "typed-cel").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("typed-cel.example.com", "web")).
					Active(builders.IngressTo("typed-cel.example.com", "sorry")).Obj()
				di.Spec.Expected = v1beta1.ExpectedResponse{Expression: `response.code == "503"`}
				return di
			}(),
			field: "spec.expected.expression", msg: `Invalid value: "response.code == \"503\"": compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'`,
		},
		{
			name: "expression too expensive",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "costly-cel").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("costly-cel.example.com", "web")).
					Active(builders.IngressTo("costly-cel.example.com", "sorry")).Obj()
				di.Spec.Expected = v1beta1.ExpectedResponse{Expression: `response.json.items.all(a, response.json.items.all(b, response.json.items.exists(c, a == b && b == c)))`}
				return di
			}(),
			field: "spec.expected.expression", msg: `Invalid value: "response.json.items.all(a, response.json.items.all(b, response.json.items.exists(c, a == b && b == c)))": ` +
				"estimated cost beyond any bound exceeds the limit 10000000: the cost is estimated for a response body of up to 3145728 bytes; simplify the expression, e.g. avoid nested loops over response.json",
		},
		{
			name: "unknown bodyMatch",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "regex").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("regex.example.com", "web")).
					Active(builders.IngressTo("regex.example.com", "sorry")).Obj()
				di.Spec.Expected.BodyMatch = "Regex"
				return di
			}(),
			field: "spec.expected.bodyMatch", msg: `Unsupported value: "Regex": supported values: "Exact", "Contains"`,
		},
		{
			name: "unknown failurePolicy",
			obj: func() client.Object {
				di := builders.DynamicIngress(ns, "never").State("flag").ExpectCode("200").
					Passive(builders.IngressTo("never.example.com", "web")).
					Active(builders.IngressTo("never.example.com", "sorry")).Obj()
				di.Spec.FailurePolicy = "Never"
				return di
			}(),
			field: "spec.failurePolicy", msg: `Unsupported value: "Never": supported values: "Passive", "Active", "Retain"`,
		},
		{
			name:  "invalid cron",
			obj:   builders.ScheduleState(ns, "bad-cron").Cron("0 25 * * *", time.Hour).Obj(),
			field: "spec.schedule.windows[0].cron", msg: `Invalid value: "0 25 * * *": invalid cron expression: end of range (25) above maximum (23): 25`,
		},
		{
			name:  "unknown time zone",
			obj:   builders.ScheduleState(ns, "bad-tz").TimeZone("Mars/Olympus").Cron("0 2 * * 0", time.Hour).Obj(),
			field: "spec.schedule.timeZone", msg: `Invalid value: "Mars/Olympus": unknown time zone: must be an IANA time zone name such as Asia/Tokyo`,
		},
		{
			name:  "duration over a week",
			obj:   builders.ScheduleState(ns, "long").Cron("0 2 * * 0", 200*time.Hour).Obj(),
			field: "spec.schedule.windows[0].duration", msg: `Invalid value: "200h0m0s": must be between 1m and 168h`,
		},
		{
			name:  "end not after start",
			obj:   builders.ScheduleState(ns, "backwards").OneOff("2026-12-26T00:00:00+09:00", "2026-12-24T00:00:00+09:00").Obj(),
			field: "spec.schedule.windows[0].end", msg: `Invalid value: "2026-12-24T00:00:00+09:00": must be after start`,
		},
		{
			name: "a window both recurring and one-off",
			obj: builders.ScheduleState(ns, "mixed").Window(v1beta1.ScheduleWindow{Cron: "0 2 * * 0", Duration: &metav1.Duration{Duration: time.Hour},
				Start: "2026-12-24T00:00:00+09:00", End: "2026-12-26T00:00:00+09:00"}).Obj(),
			field: "spec.schedule.windows[0]", msg: "Invalid value: a window is either cron with duration, or start with end",
		},
		{
			name: "explicit failureThreshold 0",
			obj: func() client.Object {
				s := builders.ProbedState(ns, "zero", "https://flags.example.com/x").Obj()
				s.Spec.Probe.FailureThreshold = ptr.To[int32](0)
				return s
			}(),
			field: "spec.probe.failureThreshold", msg: "Invalid value: 0: spec.probe.failureThreshold in body should be greater than or equal to 1",
		},
		{
			// The schema's bounds run before the webhook, which says
			// "must be at least 1 and at most 10" to objects they missed.
			name:  "successThreshold 0",
			obj:   builders.ProbedState(ns, "no-success", "https://flags.example.com/x").SuccessThreshold(0).Obj(),
			field: "spec.probe.successThreshold", msg: "Invalid value: 0: spec.probe.successThreshold in body should be greater than or equal to 1",
		},
		{
			name:  "successThreshold 11",
			obj:   builders.ProbedState(ns, "many-successes", "https://flags.example.com/x").SuccessThreshold(11).Obj(),
			field: "spec.probe.successThreshold", msg: "Invalid value: 11: spec.probe.successThreshold in body should be less than or equal to 10",
		},
		{
			name: "fixed body over 64 KiB",
			obj: &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"},
				Spec: v1beta1.DynamicIngressStateSpec{FixedResponse: &v1beta1.FixedResponse{Status: "200", Body: strings.Repeat("x", 65537)}}},
			field: "spec.fixedResponse.body", msg: "Too long: may not be more than 65536 bytes",
		},
		{
			// Under the schema's limit in characters, over the limit in bytes.
			name: "fixed body over 64 KiB in multi-byte characters",
			obj: &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big-utf8"},
				Spec: v1beta1.DynamicIngressStateSpec{FixedResponse: &v1beta1.FixedResponse{Status: "200", Body: strings.Repeat("é", 40000)}}},
			field: "spec.fixedResponse.body", msg: "Too long: may not be more than 65536 bytes",
		},
		{
			name: "fixed and probe",
			obj: func() client.Object {
				s := builders.ProbedState(ns, "both", "https://flags.example.com/x").Obj()
				s.Spec.FixedResponse = &v1beta1.FixedResponse{Status: "200"}
				return s
			}(),
			field: "spec", msg: "Invalid value: exactly one of fixedResponse, probe, schedule and service must be set",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := k8s.Create(ctx, tt.obj)
			// kubectl prints an Invalid status from its details:
			// The <Kind> "<name>" is invalid: <field>: <msg>.
			var status apierrors.APIStatus
			if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
				t.Fatalf("Create: want an Invalid status with details, got %v", err)
			}
			details := status.Status().Details
			kind := reflect.TypeOf(tt.obj).Elem().Name()
			if details.Kind != kind || details.Name != tt.obj.GetName() {
				t.Errorf("details name %s %q, want %s %q", details.Kind, details.Name, kind, tt.obj.GetName())
			}
			var fields []string
			for _, c := range details.Causes {
				fields = append(fields, c.Field)
			}
			if !slices.Contains(fields, tt.field) {
				t.Errorf("causes on %v, want one on %s", fields, tt.field)
			}
			if want := `"` + tt.obj.GetName() + `" is invalid: `; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tt.field+": "+tt.msg) {
				t.Errorf("error:\n  %s\nwant it to contain:\n  %s%s: %s", err, want, tt.field, tt.msg)
			}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(tt.obj), tt.obj); !apierrors.IsNotFound(err) {
				t.Errorf("the rejected object exists (get: %v)", err)
			}
		})
	}
	ing := &networkingv1.Ingress{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(taken), ing); err != nil || ing.ResourceVersion != taken.ResourceVersion {
		t.Errorf("the existing Ingress was touched: %v, resourceVersion %s -> %s", err, taken.ResourceVersion, ing.ResourceVersion)
	}
}

// TestRejectionsThroughTheAPIServerHideSecrets sends states whose header
// or URL holds a secret through the API server and checks the error a
// client gets (what kubectl prints, and what the API server's audit log
// keeps as the response): it says what is wrong and never holds the
// secret, whether the webhook or the CRD's own rules reject it.
func TestRejectionsThroughTheAPIServerHideSecrets(t *testing.T) {
	ns := newNamespace(t)
	const secret = "s3cr3t"
	const byWebhook = `admission webhook "vdynamicingressstate.ingress.dynamicingress.io" denied the request: `
	tests := []struct {
		name string
		obj  client.Object
		// want is the error, after `<by><kind> "<name>" is invalid: `.
		by, want string
	}{
		{
			name: "a token from a YAML block scalar: trailing newline",
			obj:  builders.ProbedState(ns, "newline", "https://flags.example.com/x").Header("Authorization", "Bearer "+secret+"\n").Obj(),
			by:   byWebhook,
			want: "spec.probe.headers[0].value: Invalid value: must not end with a newline (a YAML block scalar `|` adds one: use `|-` or a quoted string); the value is not shown, it may hold a secret",
		},
		{
			name: "a whole header line as the name",
			obj:  builders.ProbedState(ns, "colon", "https://flags.example.com/x").Header("Authorization: Bearer "+secret, "x").Obj(),
			by:   byWebhook,
			want: "spec.probe.headers[0].name: Invalid value: must be the header name alone, without a colon (what follows it goes in value); the name is not shown, it may hold a secret",
		},
		{
			name: "a denied address, with userinfo and query",
			obj:  builders.ProbedState(ns, "denied", "http://admin:"+secret+"@169.254.169.254/latest?token="+secret).Obj(),
			by:   byWebhook,
			want: `spec.probe.url: Invalid value: "http://169.254.169.254/latest": address 169.254.169.254 is inside denied range 169.254.0.0/16 (the manager's --probe-deny-cidrs)`,
		},
		{
			// The CRD's rule rejects it before the webhook is called.
			name: "a URL that is not http(s), with userinfo and query",
			obj:  builders.ProbedState(ns, "ftp", "ftp://admin:"+secret+"@flags.example.com/x?token="+secret).Obj(),
			want: `spec.probe.url: Invalid value: must be an absolute http or https URL with a host`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := k8s.Create(ctx, tt.obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("Create: want an Invalid status, got %v", err)
			}
			want := tt.by + `DynamicIngressState.ingress.dynamicingress.io "` + tt.obj.GetName() + `" is invalid: ` + tt.want
			if diff := cmp.Diff(want, err.Error()); diff != "" {
				t.Errorf("the error (-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the secret %q: %s", secret, err)
			}
		})
	}
}

func TestTargetIsImmutable(t *testing.T) {
	ns := newNamespace(t)
	di := builders.DynamicIngress(ns, "site").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("site.example.com", "web")).
		Active(builders.IngressTo("site.example.com", "sorry")).Obj()
	if err := k8s.Create(ctx, di); err != nil {
		t.Fatal(err)
	}
	err := patchDI(di, func(di *v1beta1.DynamicIngress) { di.Spec.Target.Name = "other" })
	if want := "spec.target: Invalid value"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("changing spec.target: error %v, want %q and field is immutable", err, want)
	}
}

func TestInvalidTemplateOnUpdate(t *testing.T) {
	ns := newNamespace(t)
	if err := k8s.Create(ctx, &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flag"},
		Spec: v1beta1.DynamicIngressStateSpec{FixedResponse: &v1beta1.FixedResponse{Status: "200"}}}); err != nil {
		t.Fatal(err)
	}
	di := builders.DynamicIngress(ns, "site").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("site.example.com", "web")).
		Active(builders.IngressTo("site.example.com", "sorry")).Obj()
	if err := k8s.Create(ctx, di); err != nil {
		t.Fatal(err)
	}
	// The target exists now and is ours: an update is dry-run against it.
	eventually(t, func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "site"}, &networkingv1.Ingress{})
	}).Should(Succeed())
	err := patchDI(di, func(di *v1beta1.DynamicIngress) {
		di.Spec.ActiveIngress = builders.IngressTo("site.example.com", "sorry").Path("relative").Obj()
	})
	if want := `spec.activeIngress.template.spec.rules[0].http.paths[0].path: Invalid value: "relative": must be an absolute path`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("update error %v, want it to contain %s", err, want)
	}
	// A valid change of the template on an existing target is accepted.
	if err := patchDI(di, func(di *v1beta1.DynamicIngress) {
		di.Spec.ActiveIngress = builders.IngressTo("site.example.com", "sorry-v2").Obj()
	}); err != nil {
		t.Errorf("a valid update was rejected: %v", err)
	}
}

// patchDI sends change as a merge patch: it carries no resourceVersion, so
// the controller's status writes cannot turn it into a conflict.
func patchDI(di *v1beta1.DynamicIngress, change func(*v1beta1.DynamicIngress)) error {
	patch := client.MergeFrom(di.DeepCopy())
	change(di)
	return k8s.Patch(ctx, di, patch)
}

// TestTerminatingNamespaceDoesNotBlockDeletion: a terminating namespace
// refuses even a dry-run Ingress, so checking templates on every update
// would keep a DynamicIngress with a finalizer from ever going away.
func TestTerminatingNamespaceDoesNotBlockDeletion(t *testing.T) {
	ns := newNamespace(t)
	di := builders.DynamicIngress(ns, "held").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("held.example.com", "web")).
		Active(builders.IngressTo("held.example.com", "sorry")).Obj()
	di.Finalizers = []string{"example.com/hold"}
	if err := k8s.Create(ctx, di); err != nil {
		t.Fatal(err)
	}
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := k8s.Delete(ctx, namespace); err != nil {
		t.Fatal(err)
	}
	// envtest runs no namespace controller: the namespace stays Terminating.
	eventually(t, func() error {
		_, err := controllerutil.CreateOrUpdate(ctx, k8s, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe-terminating"}}, func() error { return nil })
		return err
	}).Should(MatchError(ContainSubstring("being terminated")))

	if err := patchDI(di, func(di *v1beta1.DynamicIngress) { di.Labels = map[string]string{"team": "shop"} }); err != nil {
		t.Errorf("relabelling in a terminating namespace was refused: %v", err)
	}
	if err := k8s.Delete(ctx, di); err != nil {
		t.Fatal(err)
	}
	if err := patchDI(di, func(di *v1beta1.DynamicIngress) { di.Finalizers = nil }); err != nil {
		t.Fatalf("removing the finalizer of a deleted DynamicIngress was refused: %v", err)
	}
	eventually(t, func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(di), &v1beta1.DynamicIngress{}))
	}).Should(BeTrue())
}

func TestDefaults(t *testing.T) {
	ns := newNamespace(t)
	di := builders.DynamicIngress(ns, "site").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("site.example.com", "web")).
		Active(builders.IngressTo("site.example.com", "sorry")).Obj()
	if err := k8s.Create(ctx, di); err != nil {
		t.Fatal(err)
	}
	if di.Spec.Target.Namespace != ns {
		t.Errorf("spec.target.namespace = %q, want the object's namespace %q", di.Spec.Target.Namespace, ns)
	}

	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	tests := []struct {
		name string
		in   v1beta1.HTTPProbe
		want v1beta1.HTTPProbe
	}{
		{"all defaults", v1beta1.HTTPProbe{URL: "https://flags.example.com/a"},
			v1beta1.HTTPProbe{Type: "HTTP", Method: "GET", URL: "https://flags.example.com/a", Interval: d(30 * time.Second), Timeout: d(5 * time.Second), FailureThreshold: ptr.To[int32](3), SuccessThreshold: ptr.To[int32](1)}},
		{"timeout follows a short interval", v1beta1.HTTPProbe{URL: "https://flags.example.com/b", Interval: d(2 * time.Second)},
			v1beta1.HTTPProbe{Type: "HTTP", Method: "GET", URL: "https://flags.example.com/b", Interval: d(2 * time.Second), Timeout: d(2 * time.Second), FailureThreshold: ptr.To[int32](3), SuccessThreshold: ptr.To[int32](1)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s" + string(rune('a'+i))},
				Spec: v1beta1.DynamicIngressStateSpec{Probe: &tt.in}}
			if err := k8s.Create(ctx, state); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *state.Spec.Probe); diff != "" {
				t.Errorf("defaulted probe (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTransitionsWithWebhooks drives a DynamicIngress through its condition
// transitions with both webhooks in the path of every request.
func TestTransitionsWithWebhooks(t *testing.T) {
	ns := newNamespace(t)
	di := builders.DynamicIngress(ns, "shop").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("shop.example.com", "web")).
		Active(builders.IngressTo("shop.example.com", "sorry")).Obj()
	di.Spec.Target.Namespace = ""
	if err := k8s.Create(ctx, di); err != nil {
		t.Fatal(err)
	}
	eventually(t, conditions(di)).Should(Equal("Active=False/StateNotFound Ready=False/StateNotFound"))

	state := &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flag"},
		Spec: v1beta1.DynamicIngressStateSpec{FixedResponse: &v1beta1.FixedResponse{Status: "200"}}}
	if err := k8s.Create(ctx, state); err != nil {
		t.Fatal(err)
	}
	eventually(t, conditions(di)).Should(Equal("Active=True/Matched Ready=True/Synced"))
	eventually(t, backend(ns, "shop")).Should(Equal("sorry"))

	patch := client.MergeFrom(state.DeepCopy())
	state.Spec.FixedResponse.Status = "503"
	if err := k8s.Patch(ctx, state, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, conditions(di)).Should(Equal("Active=False/NotMatched Ready=True/Synced"))
	eventually(t, backend(ns, "shop")).Should(Equal("web"))

	if err := k8s.Delete(ctx, state); err != nil {
		t.Fatal(err)
	}
	eventually(t, conditions(di)).Should(Equal("Active=False/StateNotFound Ready=False/StateNotFound"))
}

func conditions(di *v1beta1.DynamicIngress) func() string {
	return func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(di), di); err != nil {
			return err.Error()
		}
		var out []string
		for _, typ := range []string{v1beta1.ConditionActive, v1beta1.ConditionReady} {
			if c := meta.FindStatusCondition(di.Status.Conditions, typ); c != nil {
				out = append(out, typ+"="+string(c.Status)+"/"+c.Reason)
			}
		}
		return strings.Join(out, " ")
	}
}

func backend(ns, name string) func() string {
	return func() string {
		ing := &networkingv1.Ingress{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ing); err != nil {
			return err.Error()
		}
		return ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name
	}
}
