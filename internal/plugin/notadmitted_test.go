package plugin

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// clusterFollower is a DynamicIngress in ns that follows the cluster state
// "ks", active on 503 and without a target while passive (so in shape
// with none), at generation 1, whose status says ready with reason.
func clusterFollower(ns, name string, policy v1beta1.FailurePolicy, active bool, ready metav1.ConditionStatus, reason string) *v1beta1.DynamicIngress {
	sw := builders.DynamicIngress(ns, name).ClusterState("ks").ExpectCode("503").FailurePolicy(policy).
		Passive(nil).Active(builders.IngressTo("shop.example.com", "sorry")).Obj()
	sw.Generation = 1
	activeReason := v1beta1.ReasonNotMatched
	if reason == v1beta1.ReasonStateNotAdmitted {
		activeReason = reason
	}
	sw.Status.Conditions = []metav1.Condition{
		{Type: v1beta1.ConditionActive, Status: decision.ConditionStatus(active), Reason: activeReason, ObservedGeneration: 1},
		{Type: v1beta1.ConditionReady, Status: ready, Reason: reason, ObservedGeneration: 1},
	}
	return sw
}

// readyClusterState is the cluster state "ks", fixed at code, its status
// showing its spec.
func readyClusterState(code string) *v1beta1.ClusterDynamicIngressState {
	s := builders.FixedState("", "ks", code, "").Cluster().FollowersMatching(map[string]string{"tier": "public"}).Obj()
	s.Generation = 1
	s.Status.ObservedGeneration, s.Status.Mode, s.Status.StatusCode = 1, v1beta1.StateModeFixed, code
	s.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1beta1.ReasonFixed, ObservedGeneration: 1}}
	return s
}

// TestStatusListsNotAdmittedApart: the followers whose status says the
// grant does not admit their namespace are reported apart, in the mode
// their failurePolicy selects, counted apart, and never make wait's
// OutOfShape pending.
func TestStatusListsNotAdmittedApart(t *testing.T) {
	state := readyClusterState("503")
	shop := clusterFollower("shop", "web", "", true, metav1.ConditionTrue, v1beta1.ReasonSynced)
	// Active under the state, but passive by its policy: not admitted.
	blog := clusterFollower("blog", "web", v1beta1.FailurePolicyPassive, false, metav1.ConditionFalse, v1beta1.ReasonStateNotAdmitted)
	// Its policy keeps it active.
	docs := clusterFollower("docs", "web", v1beta1.FailurePolicyActive, true, metav1.ConditionFalse, v1beta1.ReasonStateNotAdmitted)
	// Its status speaks of an older generation: not known to be left out.
	stale := clusterFollower("news", "web", "", false, metav1.ConditionFalse, v1beta1.ReasonStateNotAdmitted)
	stale.Generation = 2

	var items []Item
	for _, sw := range clusterFollowers(target.Ingress{}, []target.Switch{shop, blog, docs, stale}, "ks") {
		if sw.Switch.GetName() == "web" && sw.Switch.GetNamespace() == "shop" {
			sw.Live = liveIn(t, shop, true)
		}
		items = append(items, sw)
	}
	snap := &Snapshot{State: state.StateView(), Cluster: true, Items: items}
	report, err := Status(snap)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Namespace, Mode string
		InShape, Synced bool
	}
	rows := func(switches []SwitchReport) []row {
		var out []row
		for _, sw := range switches {
			out = append(out, row{sw.Namespace, sw.Mode, sw.InShape, sw.Synced})
		}
		return out
	}
	wantSwitches := []row{
		{"news", "active", false, false},
		// liveIn renders without the operator's managed fields: the
		// target is not in shape, which matters not here.
		{"shop", "active", false, true},
	}
	if diff := cmp.Diff(wantSwitches, rows(report.Switches)); diff != "" {
		t.Errorf("switches (-want +got):\n%s", diff)
	}
	wantNotAdmitted := []row{
		{"blog", "passive", true, false},
		{"docs", "active", false, false},
	}
	if diff := cmp.Diff(wantNotAdmitted, rows(report.NotAdmitted)); diff != "" {
		t.Errorf("not admitted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Summary{Total: 2, Active: 2, NotInShape: 2, NotAdmitted: 2}, report.Summary); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}

	// wait waits for the admitted ones only.
	pending := OutOfShape(snap, report, time.Now(), WaitFor{})
	want := []string{
		`DynamicIngress news/web: its target news/web is not in active shape; its status is not synced (NotObserved: the status does not show generation 2 yet)`,
		`DynamicIngress shop/web: its target shop/web is not in active shape`,
	}
	if diff := cmp.Diff(want, pending); diff != "" {
		t.Errorf("OutOfShape (-want +got):\n%s", diff)
	}
}

func TestLeftOut(t *testing.T) {
	follower := func(i int) SwitchReport {
		return SwitchReport{Kind: "DynamicIngress", Namespace: fmt.Sprintf("ns-%d", i), Name: "web"}
	}
	var seven []SwitchReport
	for i := range 7 {
		seven = append(seven, follower(i))
	}
	tests := []struct {
		name        string
		notAdmitted []SwitchReport
		want        string
	}{
		{"none", nil, ""},
		{"one", seven[:1], "Left out 1 follower not admitted by the grant of cdis/ks: DynamicIngress ns-0/web"},
		{"two", seven[:2], "Left out 2 followers not admitted by the grant of cdis/ks: DynamicIngress ns-0/web, DynamicIngress ns-1/web"},
		{"more than five", seven, "Left out 7 followers not admitted by the grant of cdis/ks: DynamicIngress ns-0/web, DynamicIngress ns-1/web, " +
			"DynamicIngress ns-2/web, DynamicIngress ns-3/web, DynamicIngress ns-4/web; and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Report{NotAdmitted: tt.notAdmitted}.LeftOut("cdis/ks")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestChangesLeaveNotAdmittedAlone: no answer of the state changes the
// mode of a follower its grant does not admit.
func TestChangesLeaveNotAdmittedAlone(t *testing.T) {
	state := readyClusterState("200").StateView()
	blog := clusterFollower("blog", "web", "", false, metav1.ConditionFalse, v1beta1.ReasonStateNotAdmitted)
	shop := clusterFollower("shop", "web", "", false, metav1.ConditionTrue, v1beta1.ReasonSynced)
	snap := &Snapshot{State: state, Cluster: true, Items: clusterFollowers(target.Ingress{}, []target.Switch{blog, shop}, "ks")}
	var got []string
	for _, ch := range Changes(snap, WithAnswer(state, Answer{StatusCode: "503"})) {
		got = append(got, ch.item.Switch.GetNamespace()+"/"+ch.Name+" "+ch.From+"->"+ch.To)
	}
	if diff := cmp.Diff([]string{"shop/web passive->active"}, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}
