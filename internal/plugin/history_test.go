package plugin

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

const digest503 = "sha256:6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"

// historyOf is three changes of a state, newest first: a flip to 503 that
// reached 22 followers, a flip to 200 still under way, and the creation.
func historyOf() []v1beta1.HistoryEntry {
	at := func(s int) metav1.MicroTime {
		return metav1.NewMicroTime(time.Date(2026, 11, 28, 9, 0, s, 250_000_000, time.FixedZone("JST", 9*3600)))
	}
	return []v1beta1.HistoryEntry{
		{Sequence: 3, Time: at(30), StatusCode: "503", BodyDigest: digest503, Cause: v1beta1.HistoryCauseProbe,
			Flip: &v1beta1.FlipSummary{Followers: 22, CompletedAfter: "6.31s"}},
		{Sequence: 2, Time: at(20), Cause: v1beta1.HistoryCauseNoResponse},
		{Sequence: 1, Time: at(10), StatusCode: "200", BodyDigest: digest503, Cause: v1beta1.HistoryCauseFixed,
			Flip: &v1beta1.FlipSummary{Followers: 1, CompletedAfter: "120ms"}},
	}
}

// TestHistoryOf: history reads the state the argument names, of either
// kind, and gives its entries as the API has them; a missing state, and
// one the user may not read, are one line each.
func TestHistoryOf(t *testing.T) {
	withHistory := builders.FixedState(ns, "flag", "503", "").Obj()
	withHistory.Status.History = historyOf()
	without := builders.FixedState(ns, "quiet", "200", "").Obj()
	cluster := builders.FixedState("", "global", "503", "").Cluster().FollowersAll().Obj()
	cluster.Status.History = historyOf()[:1]
	refuseStates := func(r request) error {
		if r.resource == "dynamicingressstates.ingress.dynamicingress.io" || r.resource == clusterStates {
			return forbidden(r)
		}
		return nil
	}
	tests := []struct {
		name    string
		ref     v1beta1.StateReference
		refused refuse
		want    HistoryReport
		empty   string
		err     string
	}{
		{name: "a state", ref: v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "flag"},
			want: HistoryReport{State: HistoryState{Kind: "DynamicIngressState", Name: "flag", Namespace: ns}, History: historyOf()}},
		{name: "a cluster state", ref: v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "global"},
			want: HistoryReport{State: HistoryState{Kind: "ClusterDynamicIngressState", Name: "global"}, History: historyOf()[:1]}},
		{name: "no history", ref: v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "quiet"},
			want:  HistoryReport{State: HistoryState{Kind: "DynamicIngressState", Name: "quiet", Namespace: ns}, History: []v1beta1.HistoryEntry{}},
			empty: `No history for state "quiet" in namespace "shop": no response change recorded yet`},
		{name: "missing", ref: v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "nope"},
			err: `state "nope" not found in namespace "shop"`},
		{name: "missing cluster state", ref: v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "nope"},
			err: `cluster state "nope" not found`},
		{name: "forbidden", ref: v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "flag"}, refused: refuseStates,
			err: `history needs get on dynamicingressstates.ingress.dynamicingress.io in namespace "shop": dynamicingressstates.ingress.dynamicingress.io is forbidden: User "alice" cannot get resource "dynamicingressstates" in API group "ingress.dynamicingress.io" in the namespace "shop"`},
		{name: "forbidden cluster state", ref: v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "global"}, refused: refuseStates,
			err: `history needs get on clusterdynamicingressstates.ingress.dynamicingress.io (cluster-scoped): clusterdynamicingressstates.ingress.dynamicingress.io is forbidden: User "alice" cannot get resource "clusterdynamicingressstates" in API group "ingress.dynamicingress.io" at the cluster scope`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeCluster(t, tt.refused, []client.Object{withHistory, without, cluster}...)
			got, err := HistoryOf(context.Background(), c, []target.Kind{target.Ingress{}}, ns, tt.ref)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.empty, got.Empty()); diff != "" {
				t.Errorf("empty line (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHistoryRow: the table's cells: time in UTC to the second, "-" for
// no status code, the digest to 12 hex digits, the flip summary or "-".
func TestHistoryRow(t *testing.T) {
	entries := historyOf()
	want := [][]string{
		{"3", "2026-11-28T00:00:30Z", "503", "Probe", "sha256:6e340b9cffb3", "22 followers in 6.31s"},
		{"2", "2026-11-28T00:00:20Z", "-", "NoResponse", "-", "-"},
		{"1", "2026-11-28T00:00:10Z", "200", "Fixed", "sha256:6e340b9cffb3", "1 follower in 120ms"},
	}
	var got [][]string
	for _, e := range entries {
		got = append(got, HistoryRow(e))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// TestHistoryJSON: -o json has the entries as the API has them: flip only
// once there is one, no statusCode or bodyDigest for NoResponse, and an
// empty list rather than null for a state without history.
func TestHistoryJSON(t *testing.T) {
	tests := []struct {
		name   string
		report HistoryReport
		want   string
	}{
		{"entries", HistoryReport{State: HistoryState{Kind: "DynamicIngressState", Name: "flag", Namespace: ns}, History: historyOf()[1:]},
			`{"state":{"kind":"DynamicIngressState","name":"flag","namespace":"shop"},"history":[` +
				`{"sequence":2,"time":"2026-11-28T00:00:20.250000Z","cause":"NoResponse"},` +
				`{"sequence":1,"time":"2026-11-28T00:00:10.250000Z","statusCode":"200","bodyDigest":"` + digest503 + `","cause":"Fixed","flip":{"followers":1,"completedAfter":"120ms"}}]}`},
		{"none", HistoryReport{State: HistoryState{Kind: "ClusterDynamicIngressState", Name: "global"}, History: []v1beta1.HistoryEntry{}},
			`{"state":{"kind":"ClusterDynamicIngressState","name":"global"},"history":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.report)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(raw)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
