package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/plugin"
)

// TestHistoryTable: history prints the entries newest first as a table,
// and one line for a state without history.
func TestHistoryTable(t *testing.T) {
	at := func(s int) metav1.MicroTime {
		return metav1.NewMicroTime(time.Date(2026, 11, 28, 9, 0, s, 0, time.UTC))
	}
	digest := "sha256:6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
	tests := []struct {
		name   string
		report plugin.HistoryReport
		want   string
	}{
		{"entries", plugin.HistoryReport{State: plugin.HistoryState{Kind: "DynamicIngressState", Name: "flag", Namespace: "shop"}, History: []v1beta1.HistoryEntry{
			{Sequence: 3, Time: at(30), StatusCode: "503", BodyDigest: digest, Cause: v1beta1.HistoryCauseFixed},
			{Sequence: 2, Time: at(20), StatusCode: "200", BodyDigest: digest, Cause: v1beta1.HistoryCauseFixed,
				Flip: &v1beta1.FlipSummary{Followers: 2000, CompletedAfter: "6.31s"}},
			{Sequence: 1, Time: at(10), Cause: v1beta1.HistoryCauseNoResponse},
		}}, `SEQ   TIME                   CODE   CAUSE        BODY                  FLIP
3     2026-11-28T09:00:30Z   503    Fixed        sha256:6e340b9cffb3   -
2     2026-11-28T09:00:20Z   200    Fixed        sha256:6e340b9cffb3   2000 followers in 6.31s
1     2026-11-28T09:00:10Z   -      NoResponse   -                     -
`},
		{"none", plugin.HistoryReport{State: plugin.HistoryState{Kind: "ClusterDynamicIngressState", Name: "global"}, History: []v1beta1.HistoryEntry{}},
			"No history for cluster state \"global\": no response change recorded yet\n"},
		{"pins beside the changes", plugin.HistoryReport{State: plugin.HistoryState{Kind: "DynamicIngressState", Name: "killswitch", Namespace: "demo"},
			History: []v1beta1.HistoryEntry{
				{Sequence: 3, Time: at(30), StatusCode: "503", BodyDigest: digest, Cause: v1beta1.HistoryCauseFixed,
					Flip: &v1beta1.FlipSummary{Followers: 3, CompletedAfter: "412ms"}},
				{Sequence: 2, Time: at(10), StatusCode: "200", BodyDigest: digest, Cause: v1beta1.HistoryCauseFixed},
			},
			Pins: []plugin.PinEvent{
				{Event: plugin.PinEventExpired, Time: metav1.NewTime(at(40).Time), Kind: "DynamicIngress", Name: "storefront", Mode: v1beta1.ModePassive,
					By: "alice", Until: &metav1.Time{Time: at(40).Time}, Reason: "INC-1234"},
				{Event: plugin.PinEventPinned, Time: metav1.NewTime(at(20).Time), Kind: "DynamicIngress", Name: "storefront", Mode: v1beta1.ModePassive,
					By: "alice", Until: &metav1.Time{Time: at(40).Time}, Reason: "INC-1234"},
			},
			Notes: []string{"the pins of DynamicHTTPRoutes are left out: ..."}},
			`SEQ   TIME                   CODE   CAUSE        BODY                  FLIP                   PIN
-     2026-11-28T09:00:40Z   -      PinExpired   -                     -                      DynamicIngress "storefront": passive pin by alice ended: INC-1234
3     2026-11-28T09:00:30Z   503    Fixed        sha256:6e340b9cffb3   3 followers in 412ms   -
-     2026-11-28T09:00:20Z   -      Pinned       -                     -                      DynamicIngress "storefront": passive pinned by alice until 2026-11-28T09:00:40Z: INC-1234
2     2026-11-28T09:00:10Z   200    Fixed        sha256:6e340b9cffb3   -                      -
Note: the pins of DynamicHTTPRoutes are left out: ...
`},
		{"no history, a note", plugin.HistoryReport{State: plugin.HistoryState{Kind: "DynamicIngressState", Name: "quiet", Namespace: "demo"}, History: []v1beta1.HistoryEntry{},
			Notes: []string{"the pins of DynamicIngresses are left out: ..."}},
			"No history for state \"quiet\" in namespace \"demo\": no response change recorded yet\nNote: the pins of DynamicIngresses are left out: ...\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printHistory(&options{streams: genericiooptions.IOStreams{Out: &out}}, tt.report); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
