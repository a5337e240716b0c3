package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// servedCond is a Served condition of generation 1.
func servedCond(status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: v1beta1.ConditionServed, Status: status, Reason: reason, Message: message, ObservedGeneration: 1}
}

// withServed gives sw (generation 1, its status showing its mode) a
// spec.served, the Served condition cond (none when nil) and
// status.served in mode ("" for none).
func withServed(sw *v1beta1.DynamicIngress, cond *metav1.Condition, mode v1beta1.Mode) *v1beta1.DynamicIngress {
	sw.Spec.Served = builders.Served("https://shop.example.com/", "503", "200").Obj()
	if cond != nil {
		sw.Status.Conditions = append(sw.Status.Conditions, *cond)
	}
	if mode != "" {
		sw.Status.Served = &v1beta1.ServedStatus{Mode: mode, Since: metav1.Now(), After: "2.31s"}
	}
	return sw
}

// TestServedOf: SERVED is true only when the Served condition is True for
// the switch's generation and status.served shows the mode the decision
// selects; false when the check gave up on that mode; checking otherwise;
// "" without spec.served.
func TestServedOf(t *testing.T) {
	notServed := servedCond(metav1.ConditionFalse, v1beta1.ReasonNotServed, "active mode not served within 2m0s after the target was written: HTTP 200")
	checking := servedCond(metav1.ConditionUnknown, v1beta1.ReasonChecking, "the target was written in active mode; requesting https://shop.example.com/ every 1s until it answers as that shape does (timeout 2m0s)")
	served := servedCond(metav1.ConditionTrue, v1beta1.ReasonServed, "active mode served 2.31s after the target was written")
	old := served
	old.ObservedGeneration = 0
	// active: the status shows active mode, synced; passive: passive mode.
	active := func() *v1beta1.DynamicIngress {
		return clusterFollower("shop", "web", "", true, metav1.ConditionTrue, v1beta1.ReasonSynced)
	}
	tests := []struct {
		name string
		sw   *v1beta1.DynamicIngress
		// passive: the decision selects passive mode (active otherwise).
		passive     bool
		want        string
		wantMessage string
	}{
		{"without spec.served", active(), false, "", ""},
		{"served in the mode", withServed(active(), &served, v1beta1.ModeActive), false, ServedTrue, ""},
		{"not served in the mode", withServed(active(), &notServed, v1beta1.ModePassive), false, ServedFalse,
			"NotServed: active mode not served within 2m0s after the target was written: HTTP 200"},
		{"being checked", withServed(active(), &checking, v1beta1.ModePassive), false, ServedChecking,
			"Checking: the target was written in active mode; requesting https://shop.example.com/ every 1s until it answers as that shape does (timeout 2m0s)"},
		{"True, with status.served in the other mode", withServed(active(), &served, v1beta1.ModePassive), false, ServedChecking,
			"status.served does not show active mode yet"},
		{"True, without status.served", withServed(active(), &served, ""), false, ServedChecking, "status.served does not show active mode yet"},
		{"True for an older generation", withServed(active(), &old, v1beta1.ModeActive), false, ServedChecking,
			"the status does not show the Served condition of generation 1 yet"},
		{"no Served condition yet", withServed(active(), nil, ""), false, ServedChecking,
			"the status does not show the Served condition of generation 1 yet"},
		// The decision selects passive; the status still shows active, as
		// served: that says nothing of passive mode.
		{"True for the mode the status shows, not the one the decision selects", withServed(active(), &served, v1beta1.ModeActive), true,
			ServedChecking, "the status does not show passive mode yet"},
		{"False for the mode the status shows, not the one the decision selects", withServed(active(), &notServed, v1beta1.ModePassive), true,
			ServedChecking, "the status does not show passive mode yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := ServedOf(tt.sw, !tt.passive)
			if got != tt.want || msg != tt.wantMessage {
				t.Errorf("ServedOf = %q, %q; want %q, %q", got, msg, tt.want, tt.wantMessage)
			}
		})
	}
}

// TestStatusReportsServed: status reports served per switch, as the
// decision selects its mode, and -o json has "served" only for switches
// with spec.served.
func TestStatusReportsServed(t *testing.T) {
	state := readyClusterState("503")
	served := servedCond(metav1.ConditionTrue, v1beta1.ReasonServed, "active mode served 2.31s after the target was written")
	web := withServed(clusterFollower("shop", "web", "", true, metav1.ConditionTrue, v1beta1.ReasonSynced), &served, v1beta1.ModeActive)
	blog := clusterFollower("blog", "web", "", true, metav1.ConditionTrue, v1beta1.ReasonSynced)
	snap := &Snapshot{State: state.StateView(), Cluster: true}
	for _, sw := range clusterFollowers(target.Ingress{}, []target.Switch{web, blog}, "ks") {
		sw.Live = liveIn(t, sw.Switch, true)
		snap.Items = append(snap.Items, sw)
	}
	report, err := Status(snap)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sw := range report.Switches {
		raw, err := json.Marshal(sw)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(raw, &fields); err != nil {
			t.Fatal(err)
		}
		served := "absent"
		if v, ok := fields["served"]; ok {
			served = fmt.Sprint(v)
		}
		got = append(got, sw.Namespace+"/"+sw.Name+" "+sw.Mode+" served="+served)
	}
	want := []string{"blog/web active served=absent", "shop/web active served=true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestOutOfShapeServed: with Served, a switch whose mode is not seen
// served yet is pending, saying why; a switch without spec.served counts
// once its status shows the mode, as without Served.
func TestOutOfShapeServed(t *testing.T) {
	state := fixedState("503", "")
	report := Report{Switches: []SwitchReport{
		{Kind: "DynamicIngress", Name: "served", Target: "shop/served", Mode: "active", InShape: true, Synced: true, Served: ServedTrue},
		{Kind: "DynamicIngress", Name: "plain", Target: "shop/plain", Mode: "active", InShape: true, Synced: true},
		{Kind: "DynamicIngress", Name: "slow", Target: "shop/slow", Mode: "active", InShape: true, Synced: true, Served: ServedChecking,
			ServedMessage: "Checking: the target was written in active mode; requesting https://shop.example.com/ every 1s until it answers as that shape does (timeout 2m0s)"},
		{Kind: "DynamicHTTPRoute", Name: "stuck", Target: "shop/stuck", Mode: "passive", InShape: true, Synced: true, Accepted: AcceptedTrue, Served: ServedFalse,
			ServedMessage: "NotServed: passive mode not served within 2m0s after the target was written: HTTP 503"},
	}}
	if got := OutOfShape(&Snapshot{State: state}, report, time.Now(), WaitFor{Accepted: true}); len(got) != 0 {
		t.Errorf("without Served: %q, want nothing pending", got)
	}
	want := []string{
		`DynamicIngress "slow": active mode served: checking (Checking: the target was written in active mode; requesting https://shop.example.com/ every 1s until it answers as that shape does (timeout 2m0s))`,
		`DynamicHTTPRoute "stuck": passive mode served: false (NotServed: passive mode not served within 2m0s after the target was written: HTTP 503)`,
	}
	if diff := cmp.Diff(want, OutOfShape(&Snapshot{State: state}, report, time.Now(), WaitFor{Served: true})); diff != "" {
		t.Errorf("with Served (-want +got):\n%s", diff)
	}
}

// TestWaitForServed: wait --for=served returns once the follower's mode is
// seen served, and times out, naming it, while it is checked; without
// --for=served the same follower is done, as is a follower without
// spec.served with it.
func TestWaitForServed(t *testing.T) {
	checking := servedCond(metav1.ConditionUnknown, v1beta1.ReasonChecking, "the target was written in passive mode; requesting https://shop.example.com/ every 1s until it answers as that shape does (timeout 2m0s)")
	served := servedCond(metav1.ConditionTrue, v1beta1.ReasonServed, "passive mode served 1.2s after the target was written")
	// settledCluster's shop/web is passive, in shape and synced.
	cluster := func(change func(*v1beta1.DynamicIngress)) []client.Object {
		objs := settledCluster()
		change(objs[1].(*v1beta1.DynamicIngress))
		return objs
	}
	tests := []struct {
		name    string
		objs    []client.Object
		served  bool
		wantErr string
	}{
		{"checking, --for=served", cluster(func(sw *v1beta1.DynamicIngress) { withServed(sw, &checking, "") }), true,
			`timed out after 1s waiting for state "ks": 1 not in shape: DynamicIngress shop/web: passive mode served: checking (Checking: the target was written in passive mode; requesting https://shop.example.com/ every 1s until it answers as that shape does (timeout 2m0s)) (left out 1 follower not admitted by the grant)`},
		{"checking, without --for=served", cluster(func(sw *v1beta1.DynamicIngress) { withServed(sw, &checking, "") }), false, ""},
		{"served in its mode", cluster(func(sw *v1beta1.DynamicIngress) { withServed(sw, &served, v1beta1.ModePassive) }), true, ""},
		{"served in the other mode", cluster(func(sw *v1beta1.DynamicIngress) { withServed(sw, &served, v1beta1.ModeActive) }), true,
			`timed out after 1s waiting for state "ks": 1 not in shape: DynamicIngress shop/web: passive mode served: checking (status.served does not show passive mode yet) (left out 1 follower not admitted by the grant)`},
		{"without spec.served", settledCluster(), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Wait(context.Background(), fakeCluster(t, nil, tt.objs...), []target.Kind{target.Ingress{}},
				WaitOptions{State: "ks", Cluster: true, Timeout: time.Second, Served: tt.served})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("wait: %q\nwant %q", got, tt.wantErr)
			}
		})
	}
}
