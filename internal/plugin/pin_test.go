package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// pinNow is the clock of the pin tests.
var pinNow = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)

// TestPinFlags: --for is a positive duration from now, --until an RFC 3339
// time, never both; --reason is not empty; none takes none of them. Each
// refusal is a usage error naming the flag.
func TestPinFlags(t *testing.T) {
	tests := []struct {
		name   string
		flags  PinFlags
		mode   v1beta1.Mode
		until  string // RFC 3339, "" for no end
		reason string
		err    string
	}{
		// now is 250ms past the second: the end is rounded up, so that the
		// pin lasts at least --for.
		{name: "for", flags: PinFlags{For: "2h"}, mode: v1beta1.ModeActive, until: "2026-12-02T03:00:01Z"},
		{name: "for, to the second", flags: PinFlags{For: "90m1500ms"}, mode: v1beta1.ModeActive, until: "2026-12-02T02:30:02Z"},
		{name: "until, in UTC", flags: PinFlags{Until: "2026-12-02T12:00:00+09:00", Reason: "INC-1234", ReasonSet: true}, mode: v1beta1.ModePassive,
			until: "2026-12-02T03:00:00Z", reason: "INC-1234"},
		// Whether it is in the future is the webhook's word.
		{name: "until in the past is sent", flags: PinFlags{Until: "2026-12-01T00:00:00Z"}, mode: v1beta1.ModeActive, until: "2026-12-01T00:00:00Z"},
		{name: "no end, a reason", flags: PinFlags{Reason: "INC-1234", ReasonSet: true}, mode: v1beta1.ModeActive, reason: "INC-1234"},
		{name: "no end", mode: v1beta1.ModeActive},
		{name: "none", mode: ""},
		{name: "both", flags: PinFlags{For: "2h", Until: "2026-12-02T03:00:00Z"}, mode: v1beta1.ModeActive,
			err: "--for and --until are exclusive: give one"},
		{name: "bad duration", flags: PinFlags{For: "2 hours"}, mode: v1beta1.ModeActive,
			err: `--for "2 hours" is not a duration such as 2h or 30m`},
		{name: "a duration without a unit", flags: PinFlags{For: "2"}, mode: v1beta1.ModeActive,
			err: `--for "2" is not a duration such as 2h or 30m`},
		{name: "zero duration", flags: PinFlags{For: "0s"}, mode: v1beta1.ModeActive,
			err: `--for "0s" is not a positive duration such as 2h or 30m`},
		{name: "negative duration", flags: PinFlags{For: "-1h"}, mode: v1beta1.ModeActive,
			err: `--for "-1h" is not a positive duration such as 2h or 30m`},
		{name: "bad time", flags: PinFlags{Until: "03:00"}, mode: v1beta1.ModeActive,
			err: `--until "03:00" is not an RFC 3339 time such as 2026-12-02T03:00:00Z`},
		{name: "empty reason", flags: PinFlags{For: "2h", ReasonSet: true}, mode: v1beta1.ModeActive,
			err: "--reason must not be empty"},
		{name: "none with for", flags: PinFlags{For: "2h"}, mode: "",
			err: "--for, --until and --reason go with active or passive: none removes the pin, its end and its reason"},
		{name: "none with reason", flags: PinFlags{Reason: "done", ReasonSet: true}, mode: "",
			err: "--for, --until and --reason go with active or passive: none removes the pin, its end and its reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			until, reason, err := tt.flags.Pin(tt.mode, pinNow.Add(250*time.Millisecond))
			if tt.err != "" {
				var usage *UsageError
				if !errors.As(err, &usage) || err.Error() != tt.err {
					t.Fatalf("error %v, want the usage error %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if until != nil {
				got = until.UTC().Format(time.RFC3339Nano)
			}
			if got != tt.until || reason != tt.reason {
				t.Errorf("until %q, reason %q; want %q, %q", got, reason, tt.until, tt.reason)
			}
		})
	}
}

// pinnedWeb is the DynamicIngress web in shop following the state flag
// (active on 503), pinned to mode until until (zero: no end) for reason.
func pinnedWeb(mode v1beta1.Mode, until time.Time, reason string) *v1beta1.DynamicIngress {
	return switchFor("web", func(w *builders.DynamicIngressWrapper) {
		w.Override(mode).OverrideReason(reason)
		if !until.IsZero() {
			w.OverrideUntil(until)
		}
	}, "")
}

// audited is sw with the audit annotations of bob's pin at midnight.
func audited(sw *v1beta1.DynamicIngress) *v1beta1.DynamicIngress {
	sw = sw.DeepCopy()
	sw.Annotations = map[string]string{v1beta1.OverrideByAnnotation: "bob", v1beta1.OverrideAtAnnotation: "2026-12-02T00:00:00.000000Z"}
	return sw
}

// webhookRefusal is how the API server answers a patch the validating
// webhook refuses with errs.
func webhookRefusal(errs field.ErrorList) error {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: v1beta1.GroupVersion.Group, Kind: "DynamicIngress"}, "web", errs)
	status := invalid.Status()
	status.Message = `admission webhook "vdynamicingress.ingress.dynamicingress.io" denied the request: ` + status.Message
	return &apierrors.StatusError{ErrStatus: status}
}

// TestOverridePinThatEnds: override writes the pin, its end and its reason
// in one patch, removes the end and reason it is not given (none removes
// all three), and says what now holds; the webhook's refusal is the
// command's error, as the webhook words it.
func TestOverridePinThatEnds(t *testing.T) {
	until := func(s string) *metav1.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &metav1.Time{Time: tm}
	}
	old := pinnedWeb(v1beta1.ModeActive, pinNow.Add(time.Hour), "INC-1000")
	tooLate := webhookRefusal(field.ErrorList{field.Invalid(field.NewPath("spec", "overrideUntil"), "2026-12-02T00:00:00Z",
		"must be in the future (now is 2026-12-02T01:00:00Z): a pin that ends before it starts pins nothing")})
	refuseTooLate := func(r request) error {
		if r.verb == "patch" {
			return tooLate
		}
		return nil
	}
	tests := []struct {
		name    string
		sw      *v1beta1.DynamicIngress
		refused refuse
		mode    v1beta1.Mode
		opts    OverrideOptions
		// stored is spec.override, overrideUntil (RFC 3339) and
		// overrideReason after the command.
		stored [3]string
		// modeNow is the mode the switch now has, by the operator's decision.
		modeNow string
		pin     *PinReport
		line    string
		err     string
	}{
		{name: "--for 2h --reason", sw: switchFor("web", nil, ""), mode: v1beta1.ModePassive,
			opts:    OverrideOptions{Until: until("2026-12-02T03:00:00Z"), Reason: "INC-1234"},
			stored:  [3]string{"Passive", "2026-12-02T03:00:00Z", "INC-1234"},
			pin:     &PinReport{Mode: v1beta1.ModePassive, Until: ptr.To("2026-12-02T03:00:00Z"), Reason: "INC-1234", Phase: v1beta1.OverridePhaseInEffect, Left: "2h"},
			line:    `DynamicIngress "web": spec.override pins passive mode until 2026-12-02T03:00:00Z (in 2h), reason "INC-1234"; state "flag" would select active mode`,
			modeNow: "passive"},
		{name: "--until, no reason: the old reason goes", sw: old, mode: v1beta1.ModePassive,
			opts:    OverrideOptions{Until: until("2026-12-02T02:59:30Z")},
			stored:  [3]string{"Passive", "2026-12-02T02:59:30Z", ""},
			pin:     &PinReport{Mode: v1beta1.ModePassive, Until: ptr.To("2026-12-02T02:59:30Z"), Phase: v1beta1.OverridePhaseInEffect, Left: "1h59m30s"},
			line:    `DynamicIngress "web": spec.override pins passive mode until 2026-12-02T02:59:30Z (in 1h59m30s); state "flag" would select active mode`,
			modeNow: "passive"},
		{name: "no end: the old end and reason go, the line as before", sw: old, mode: v1beta1.ModePassive,
			stored:  [3]string{"Passive", "", ""},
			pin:     &PinReport{Mode: v1beta1.ModePassive, Phase: v1beta1.OverridePhaseInEffect},
			line:    `DynamicIngress "web": spec.override pins passive mode; state "flag" would select active mode`,
			modeNow: "passive"},
		{name: "no end, a reason", sw: switchFor("web", nil, ""), mode: v1beta1.ModePassive, opts: OverrideOptions{Reason: "load test"},
			stored:  [3]string{"Passive", "", "load test"},
			pin:     &PinReport{Mode: v1beta1.ModePassive, Reason: "load test", Phase: v1beta1.OverridePhaseInEffect},
			line:    `DynamicIngress "web": spec.override pins passive mode, reason "load test"; state "flag" would select active mode`,
			modeNow: "passive"},
		{name: "none removes all three", sw: old, mode: "",
			stored:  [3]string{"", "", ""},
			line:    `DynamicIngress "web": spec.override removed; it follows state "flag", which selects active mode`,
			modeNow: "active"},
		{name: "the webhook refuses an end in the past", sw: old, refused: refuseTooLate, mode: v1beta1.ModePassive,
			opts:   OverrideOptions{Until: until("2026-12-02T00:00:00Z")},
			stored: [3]string{"Active", "2026-12-02T02:00:00Z", "INC-1000"},
			err: `setting spec.override of DynamicIngress "web" in namespace "shop": admission webhook "vdynamicingress.ingress.dynamicingress.io" denied the request: ` +
				`DynamicIngress.ingress.dynamicingress.io "web" is invalid: spec.overrideUntil: Invalid value: "2026-12-02T00:00:00Z": must be in the future (now is 2026-12-02T01:00:00Z): a pin that ends before it starts pins nothing`},
		{name: "none, client dry run", sw: pinnedWeb(v1beta1.ModePassive, pinNow.Add(time.Hour), "INC-1000"), mode: "",
			opts:    OverrideOptions{DryRun: "client"},
			stored:  [3]string{"Passive", "2026-12-02T02:00:00Z", "INC-1000"},
			line:    `DynamicIngress "web": spec.override removed; it follows state "flag", which selects active mode (client dry run)`,
			modeNow: "active"},
		// No webhook sees a client dry run: the pin it shows has ended,
		// and the mode is the state's.
		{name: "client dry run of an end in the past", sw: audited(old), mode: v1beta1.ModePassive,
			opts:    OverrideOptions{Until: until("2026-12-02T00:00:00Z"), DryRun: "client"},
			stored:  [3]string{"Active", "2026-12-02T02:00:00Z", "INC-1000"},
			pin:     &PinReport{Mode: v1beta1.ModePassive, Until: ptr.To("2026-12-02T00:00:00Z"), Phase: v1beta1.OverridePhaseExpired, Ago: "1h"},
			line:    `DynamicIngress "web": spec.override pins passive mode until 2026-12-02T00:00:00Z, which has passed (1h ago): it follows its state; state "flag" would select active mode (client dry run)`,
			modeNow: "active"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, admin := fakeClusterAndAdmin(t, tt.refused, fixedState("503", ""), tt.sw.DeepCopy())
			opts := tt.opts
			opts.Now = pinNow
			got, err := Override(context.Background(), c, target.Ingress{}, ns, "web", tt.mode, opts)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
			} else {
				if err != nil {
					t.Fatalf("override: %v", err)
				}
				if got.Mode != tt.modeNow {
					t.Errorf("mode %q, want %q", got.Mode, tt.modeNow)
				}
				if diff := cmp.Diff(tt.pin, got.Pin); diff != "" {
					t.Errorf("pin (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.line, got.String()); diff != "" {
					t.Errorf("line (-want +got):\n%s", diff)
				}
			}
			stored := &v1beta1.DynamicIngress{}
			if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "web"}, stored); err != nil {
				t.Fatal(err)
			}
			gotStored := [3]string{string(stored.Spec.Override), "", stored.Spec.OverrideReason}
			if u := stored.Spec.OverrideUntil; u != nil {
				gotStored[1] = u.UTC().Format(time.RFC3339)
			}
			if diff := cmp.Diff(tt.stored, gotStored); diff != "" {
				t.Errorf("stored override, until, reason (-want +got):\n%s", diff)
			}
		})
	}
}

// withPinStatus is sw with status.override as the manager wrote it.
func withPinStatus(sw *v1beta1.DynamicIngress, by string, at time.Time, phase v1beta1.OverridePhase) *v1beta1.DynamicIngress {
	sw = sw.DeepCopy()
	summary := string(sw.Spec.Override)
	if phase != v1beta1.OverridePhaseInEffect {
		summary += " (" + string(phase) + ")"
	}
	sw.Status.Override = &v1beta1.OverrideStatus{Mode: sw.Spec.Override, By: by, At: &metav1.Time{Time: at}, Until: sw.Spec.OverrideUntil,
		Reason: sw.Spec.OverrideReason, Phase: phase, Summary: summary}
	return sw
}

// TestStatusOfPins: status decides each switch's mode with its pin only
// while the pin holds (until its end, by the clock, as the manager
// does), and shows the pin as status.override has it, or from spec and the
// audit annotations while the status has none for it yet.
func TestStatusOfPins(t *testing.T) {
	on := func(name string, change func(*builders.DynamicIngressWrapper)) *v1beta1.DynamicIngress {
		return switchFor(name, change, "")
	}
	pinned := func(mode v1beta1.Mode, until time.Duration, reason string) func(*builders.DynamicIngressWrapper) {
		return func(w *builders.DynamicIngressWrapper) {
			w.Override(mode).OverrideReason(reason)
			if until != 0 {
				w.OverrideUntil(pinNow.Add(until))
			}
		}
	}
	setAt := pinNow.Add(-time.Minute)
	// The state answers 200: each follower selects passive unless pinned.
	objs := []client.Object{
		fixedState("200", ""),
		withPinStatus(on("storefront", pinned(v1beta1.ModeActive, 119*time.Minute, "INC-1234")), "alice", setAt, v1beta1.OverridePhaseInEffect),
		// The manager has not woken for its end yet: the clock says it ended.
		withPinStatus(on("blog", pinned(v1beta1.ModeActive, -5*time.Minute, "INC-1200")), "alice", setAt.Add(-time.Hour), v1beta1.OverridePhaseInEffect),
		withPinStatus(on("docs", pinned(v1beta1.ModeActive, -time.Hour, "")), "carol", setAt.Add(-2*time.Hour), v1beta1.OverridePhaseExpired),
		// Pinned a moment ago: the manager has not written status.override.
		audited(on("api", pinned(v1beta1.ModeActive, 0, ""))),
		// status.override of the pin before: spec says what holds now.
		withPinStatus(on("cart", pinned(v1beta1.ModeActive, 30*time.Minute, "INC-1300")), "dave", setAt, v1beta1.OverridePhaseInEffect),
		on("web", nil),
	}
	cart := objs[5].(*v1beta1.DynamicIngress)
	cart.Status.Override.Until = &metav1.Time{Time: pinNow.Add(-time.Minute)}
	cart.Status.Override.Phase = v1beta1.OverridePhaseExpired
	c := fakeCluster(t, nil, objs...)
	_, report, err := StatusOfStateAt(context.Background(), c, []target.Kind{target.Ingress{}}, ns, namespaced("flag"), pinNow)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ Name, Mode, Column, Line string }
	var got []row
	for _, sw := range report.Switches {
		got = append(got, row{sw.Name, sw.Mode, sw.OverrideColumn(), sw.PinLine()})
	}
	want := []row{
		{"api", "active", "active", `DynamicIngress "api": active pinned by bob with no end`},
		{"blog", "passive", "active (expired)", `DynamicIngress "blog": active pinned by alice ended at 2026-12-02T00:55:00Z (expired 5m ago): INC-1200`},
		{"cart", "active", "active", `DynamicIngress "cart": active pinned until 2026-12-02T01:30:00Z (in 30m): INC-1300`},
		{"docs", "passive", "active (expired)", `DynamicIngress "docs": active pinned by carol ended at 2026-12-02T00:00:00Z (expired 1h ago)`},
		{"storefront", "active", "active", `DynamicIngress "storefront": active pinned by alice until 2026-12-02T02:59:00Z (in 1h59m): INC-1234`},
		{"web", "passive", "none", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// -o json: the pin as status.override has it.
	var storefront *PinReport
	for _, sw := range report.Switches {
		if sw.Name == "storefront" {
			storefront = sw.Pin
		}
	}
	raw, err := json.Marshal(storefront)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"mode":"Active","by":"alice","at":"2026-12-02T00:59:00Z","until":"2026-12-02T02:59:00Z","reason":"INC-1234","phase":"InEffect","left":"1h59m"}`
	if diff := cmp.Diff(wantJSON, string(raw)); diff != "" {
		t.Errorf("json (-want +got):\n%s", diff)
	}
}

// TestChangesOfPins: preview leaves a switch alone while its pin holds,
// and previews one whose pin ended as following its state.
func TestChangesOfPins(t *testing.T) {
	tests := []struct {
		name  string
		until time.Duration
		want  string
	}{
		{"the pin holds", time.Hour, ""},
		{"the pin ended", -time.Minute, "passive->active"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sw := pinnedWeb(v1beta1.ModePassive, pinNow.Add(tt.until), "")
			state := fixedState("200", "")
			snap := &Snapshot{State: state, Items: []Item{{Kind: target.Ingress{}, Switch: sw}}, Now: pinNow}
			got := ""
			for _, ch := range Changes(snap, WithAnswer(state, Answer{StatusCode: "503"})) {
				got = ch.From + "->" + ch.To
			}
			if got != tt.want {
				t.Errorf("change %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHistoryPins: history shows, beside the state's changes, when each
// follower was pinned and when its pin ended, from status.override, newest
// first; the pins of switches that follow another state are not its; the
// followers the user may not list leave a note.
func TestHistoryPins(t *testing.T) {
	at := func(h, m, s int) time.Time { return time.Date(2026, 11, 28, h, m, s, 0, time.UTC) }
	state := builders.FixedState(ns, "flag", "503", "").Obj()
	state.Status.History = historyOf()
	follower := func(name, follows string, mode v1beta1.Mode, until time.Time, reason string) *v1beta1.DynamicIngress {
		return switchFor(name, func(w *builders.DynamicIngressWrapper) {
			w.State(follows).Override(mode).OverrideUntil(until).OverrideReason(reason)
		}, "")
	}
	storefront := withPinStatus(follower("storefront", "flag", v1beta1.ModeActive, at(2, 0, 0), "INC-1234"), "alice", at(0, 0, 25), v1beta1.OverridePhaseInEffect)
	blog := withPinStatus(follower("blog", "flag", v1beta1.ModePassive, at(0, 0, 15), ""), "bob", at(0, 0, 5), v1beta1.OverridePhaseExpired)
	// Not written by the manager yet: nothing to show.
	api := follower("api", "flag", v1beta1.ModeActive, at(3, 0, 0), "")
	other := withPinStatus(follower("other", "other-flag", v1beta1.ModeActive, at(2, 0, 0), ""), "carol", at(0, 0, 26), v1beta1.OverridePhaseInEffect)
	noEnd := switchFor("cart", func(w *builders.DynamicIngressWrapper) { w.Override(v1beta1.ModePassive) }, "")
	noEnd.Status.Override = &v1beta1.OverrideStatus{Mode: v1beta1.ModePassive, At: &metav1.Time{Time: at(0, 0, 30)}, Phase: v1beta1.OverridePhaseInEffect}

	refuseSwitches := func(r request) error {
		if r.resource == dynamicIngresses {
			return forbidden(r)
		}
		return nil
	}
	tests := []struct {
		name    string
		refused refuse
		pins    []PinEvent
		notes   []string
		rows    [][]string
	}{
		{name: "pins and ends beside the changes",
			pins: []PinEvent{
				{Event: PinEventPinned, Time: metav1.NewTime(at(0, 0, 30)), Kind: "DynamicIngress", Name: "cart", Mode: v1beta1.ModePassive},
				{Event: PinEventPinned, Time: metav1.NewTime(at(0, 0, 25)), Kind: "DynamicIngress", Name: "storefront", Mode: v1beta1.ModeActive, By: "alice",
					Until: &metav1.Time{Time: at(2, 0, 0)}, Reason: "INC-1234"},
				{Event: PinEventExpired, Time: metav1.NewTime(at(0, 0, 15)), Kind: "DynamicIngress", Name: "blog", Mode: v1beta1.ModePassive, By: "bob",
					Until: &metav1.Time{Time: at(0, 0, 15)}},
				{Event: PinEventPinned, Time: metav1.NewTime(at(0, 0, 5)), Kind: "DynamicIngress", Name: "blog", Mode: v1beta1.ModePassive, By: "bob",
					Until: &metav1.Time{Time: at(0, 0, 15)}},
			},
			rows: [][]string{
				{"3", "2026-11-28T00:00:30Z", "503", "Probe", "sha256:6e340b9cffb3", "22 followers in 6.31s", "-"},
				{"-", "2026-11-28T00:00:30Z", "-", "Pinned", "-", "-", `DynamicIngress "cart": passive pinned with no end`},
				{"-", "2026-11-28T00:00:25Z", "-", "Pinned", "-", "-", `DynamicIngress "storefront": active pinned by alice until 2026-11-28T02:00:00Z: INC-1234`},
				{"2", "2026-11-28T00:00:20Z", "-", "NoResponse", "-", "-", "-"},
				{"-", "2026-11-28T00:00:15Z", "-", "PinExpired", "-", "-", `DynamicIngress "blog": passive pin by bob ended`},
				{"1", "2026-11-28T00:00:10Z", "200", "Fixed", "sha256:6e340b9cffb3", "1 follower in 120ms", "-"},
				{"-", "2026-11-28T00:00:05Z", "-", "Pinned", "-", "-", `DynamicIngress "blog": passive pinned by bob until 2026-11-28T00:00:15Z`},
			}},
		{name: "followers it may not list", refused: refuseSwitches,
			notes: []string{`the pins of DynamicIngresses are left out: listing them in namespace "shop" needs list on dynamicingresses.ingress.dynamicingress.io, which you lack`},
			rows: [][]string{
				{"3", "2026-11-28T00:00:30Z", "503", "Probe", "sha256:6e340b9cffb3", "22 followers in 6.31s"},
				{"2", "2026-11-28T00:00:20Z", "-", "NoResponse", "-", "-"},
				{"1", "2026-11-28T00:00:10Z", "200", "Fixed", "sha256:6e340b9cffb3", "1 follower in 120ms"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeCluster(t, tt.refused, state, storefront, blog, api, other, noEnd)
			got, err := HistoryOf(context.Background(), c, []target.Kind{target.Ingress{}}, ns, namespaced("flag"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.pins, got.Pins); diff != "" {
				t.Errorf("pins (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.notes, got.Notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			_, rows := got.Table()
			if diff := cmp.Diff(tt.rows, rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHistoryPinsOfClusterState: the pins of a cluster state's followers
// are named with their namespace.
func TestHistoryPinsOfClusterState(t *testing.T) {
	until := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	web := clusterFollower("shop", "web", "", true, metav1.ConditionTrue, v1beta1.ReasonSynced)
	web.Spec.Override, web.Spec.OverrideUntil = v1beta1.ModeActive, &metav1.Time{Time: until}
	web = withPinStatus(web, "alice", pinNow, v1beta1.OverridePhaseInEffect)
	c := fakeCluster(t, nil, readyClusterState("503"), web)
	got, err := HistoryOf(context.Background(), c, []target.Kind{target.Ingress{}}, "", v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "ks"})
	if err != nil {
		t.Fatal(err)
	}
	columns, rows := got.Table()
	want := [][]string{
		{"SEQ", "TIME", "CODE", "CAUSE", "BODY", "FLIP", "PIN"},
		{"-", "2026-12-02T01:00:00Z", "-", "Pinned", "-", "-", "DynamicIngress shop/web: active pinned by alice until 2026-12-02T03:00:00Z"},
	}
	if diff := cmp.Diff(want, append([][]string{columns}, rows...)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got.Empty() != "" {
		t.Errorf("a cluster state whose follower is pinned has no history: %q", got.Empty())
	}
}

// TestPinLeft: how long a pin has left, and how long ago it ended, in
// whole seconds as a countdown counts, without trailing zero units.
func TestPinLeft(t *testing.T) {
	now := pinNow.Add(250 * time.Millisecond)
	tests := []struct {
		until     time.Time
		phase     v1beta1.OverridePhase
		left, ago string
	}{
		// --for 2h, the end rounded up to the second.
		{pinNow.Add(2*time.Hour + time.Second), v1beta1.OverridePhaseInEffect, "2h", ""},
		{pinNow.Add(2 * time.Hour), v1beta1.OverridePhaseInEffect, "1h59m59s", ""},
		{pinNow.Add(119*time.Minute + time.Second), v1beta1.OverridePhaseInEffect, "1h59m", ""},
		{pinNow.Add(time.Hour + 31*time.Second), v1beta1.OverridePhaseInEffect, "1h0m30s", ""},
		{pinNow.Add(46 * time.Second), v1beta1.OverridePhaseInEffect, "45s", ""},
		{pinNow.Add(-time.Minute), v1beta1.OverridePhaseExpired, "", "1m"},
	}
	for _, tt := range tests {
		pin := &v1beta1.OverrideStatus{Mode: v1beta1.ModeActive, Until: &metav1.Time{Time: tt.until}, Phase: tt.phase}
		got := pinReport(pin, now)
		if got.Left != tt.left || got.Ago != tt.ago {
			t.Errorf("until %s: left %q, ago %q; want %q, %q", tt.until.Format(time.RFC3339), got.Left, got.Ago, tt.left, tt.ago)
		}
	}
}

// TestStatusOfApprovals: under a state whose policy needs approval for
// Passive, status shows a pin waiting for approval as pending, with the
// switch following its state, also before the manager wrote its status;
// an approved pin holds and names its approver, also when the approval is
// newer than the status; history shows the approval at its time.
func TestStatusOfApprovals(t *testing.T) {
	state := fixedState("503", "")
	state.Spec.OverridePolicy = &v1beta1.OverridePolicy{Approval: &v1beta1.OverrideApproval{Modes: []v1beta1.Mode{v1beta1.ModePassive}}}
	pinPassive := func(name string) *v1beta1.DynamicIngress {
		return audited(switchFor(name, func(w *builders.DynamicIngressWrapper) {
			w.Override(v1beta1.ModePassive).OverrideUntil(pinNow.Add(time.Hour)).OverrideReason("INC-9")
		}, ""))
	}
	approve := func(sw *v1beta1.DynamicIngress) *v1beta1.DynamicIngress {
		sw.Annotations[v1beta1.OverrideApprovedByAnnotation] = "carol"
		sw.Annotations[v1beta1.OverrideApprovedAtAnnotation] = "2026-12-02T00:30:00.000000Z"
		return sw
	}
	setAt := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	objs := []client.Object{state,
		// The manager has not written status.override yet.
		pinPassive("fresh"),
		withPinStatus(pinPassive("waiting"), "bob", setAt, v1beta1.OverridePhasePendingApproval),
		// Approved a moment ago: the status still says pending.
		approve(withPinStatus(pinPassive("approved"), "bob", setAt, v1beta1.OverridePhasePendingApproval)),
	}
	c := fakeCluster(t, nil, objs...)
	_, report, err := StatusOfStateAt(context.Background(), c, []target.Kind{target.Ingress{}}, ns, namespaced("flag"), pinNow)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ Name, Mode, Column, Line string }
	var got []row
	for _, sw := range report.Switches {
		got = append(got, row{sw.Name, sw.Mode, sw.OverrideColumn(), sw.PinLine()})
	}
	want := []row{
		{"approved", "passive", "passive", `DynamicIngress "approved": passive pinned by bob until 2026-12-02T02:00:00Z (in 1h), approved by carol: INC-9`},
		{"fresh", "active", "passive (pending approval)", `DynamicIngress "fresh": passive pinned by bob until 2026-12-02T02:00:00Z (in 1h), pending approval: INC-9`},
		{"waiting", "active", "passive (pending approval)", `DynamicIngress "waiting": passive pinned by bob until 2026-12-02T02:00:00Z (in 1h), pending approval: INC-9`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	approved := approve(withPinStatus(pinPassive("approved"), "bob", setAt, v1beta1.OverridePhaseInEffect))
	approved.Status.Override.ApprovedBy = "carol"
	history, err := HistoryOf(context.Background(), fakeCluster(t, nil, state, approved), []target.Kind{target.Ingress{}}, ns, namespaced("flag"))
	if err != nil {
		t.Fatal(err)
	}
	_, rows := history.Table()
	wantRows := [][]string{
		{"-", "2026-12-02T00:30:00Z", "-", "PinApproved", "-", "-", `DynamicIngress "approved": passive pin by bob approved by carol: INC-9`},
		{"-", "2026-12-02T00:00:00Z", "-", "Pinned", "-", "-", `DynamicIngress "approved": passive pinned by bob until 2026-12-02T02:00:00Z: INC-9`},
	}
	if diff := cmp.Diff(wantRows, rows); diff != "" {
		t.Errorf("history rows (-want +got):\n%s", diff)
	}
}
