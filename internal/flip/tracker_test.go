package flip

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/notify"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// TestFlipProgress: a flip in progress tells a notifier how many
// followers do not show it yet, in every namespace, and names the first
// ten of its own namespace only; once complete, there is none, and the
// summary counts the namespaces.
func TestFlipProgress(t *testing.T) {
	tracker := NewTracker(1, time.Now)
	var keys []types.NamespacedName
	for i := range 12 {
		keys = append(keys, types.NamespacedName{Namespace: "shop", Name: fmt.Sprintf("web-%02d", 11-i)})
	}
	keys = append(keys, types.NamespacedName{Namespace: "blog", Name: "a"})
	tracker.Expect("/global", "503", "", "DynamicIngress", keys)

	want := &notify.FlipProgress{Remaining: 13, Names: []string{
		"DynamicIngress/web-00", "DynamicIngress/web-01", "DynamicIngress/web-02", "DynamicIngress/web-03", "DynamicIngress/web-04",
		"DynamicIngress/web-05", "DynamicIngress/web-06", "DynamicIngress/web-07", "DynamicIngress/web-08", "DynamicIngress/web-09"}}
	if diff := cmp.Diff(want, tracker.Progress("/global", "shop")); diff != "" {
		t.Errorf("progress for shop (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&notify.FlipProgress{Remaining: 13, Names: []string{"DynamicIngress/a"}}, tracker.Progress("/global", "blog")); diff != "" {
		t.Errorf("progress for blog (-want +got):\n%s", diff)
	}
	for _, k := range keys {
		tracker.Settled("/global", "503", "", target.SwitchID{Kind: "DynamicIngress", Key: k})
	}
	if p := tracker.Progress("/global", "shop"); p != nil {
		t.Errorf("progress after every follower settled = %+v, want none", p)
	}
	if done := tracker.completed["/global"]; done.summary.Followers != 13 || done.summary.Namespaces != 2 {
		t.Errorf("summary = %+v, want 13 followers in 2 namespaces", done.summary)
	}
}

// TestFlipTrackerForgetsARepointedSwitch: a follower re-pointed to another
// state mid-flip does not hold the flip of the state it left: the flip
// completes with the followers that showed it, and nothing stays stalled.
func TestFlipTrackerForgetsARepointedSwitch(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tracker := NewTracker(1, func() time.Time { return now })
	a := types.NamespacedName{Namespace: "shop", Name: "a"}
	b := types.NamespacedName{Namespace: "shop", Name: "b"}
	tracker.Expect("shop/killswitch", "503", "", "DynamicIngress", []types.NamespacedName{a, b})
	tracker.Settled("shop/killswitch", "503", "", target.SwitchID{Kind: "DynamicIngress", Key: b})
	if p := tracker.Progress("shop/killswitch", "shop"); p == nil || p.Remaining != 1 {
		t.Fatalf("progress before a is re-pointed = %+v, want 1 remaining", p)
	}

	// a now follows shop/window only.
	tracker.KeepOnlyIn([]string{"shop/window"}, target.SwitchID{Kind: "DynamicIngress", Key: a})
	if p := tracker.Progress("shop/killswitch", "shop"); p != nil {
		t.Errorf("progress after a was re-pointed = %+v, want none in progress", p)
	}
	history := []v1beta1.HistoryEntry{{Sequence: 2, StatusCode: "503", BodyDigest: decision.BodyDigest("")}}
	if !tracker.Summarise("shop/killswitch", history) {
		t.Fatal("the flip left by a has no summary to write")
	}
	if diff := cmp.Diff(&v1beta1.FlipSummary{Followers: 2, Namespaces: 1, CompletedAfter: decision.FormatAfter(0)}, history[0].Flip); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	tracker.Written("shop/killswitch")
	if len(tracker.flips) != 0 || len(tracker.completed) != 0 {
		t.Errorf("the tracker keeps %d flips and %d summaries, want none", len(tracker.flips), len(tracker.completed))
	}
}

// TestFlipTrackerForgetsADeletedState: what a state deleted mid-flip left
// is freed.
func TestFlipTrackerForgetsADeletedState(t *testing.T) {
	tracker := NewTracker(1, time.Now)
	tracker.Expect("shop/killswitch", "503", "", "DynamicIngress", []types.NamespacedName{{Namespace: "shop", Name: "a"}})
	tracker.Expect("/global", "503", "", "DynamicIngress", nil) // complete at once, without followers
	tracker.ForgetState("shop/killswitch")
	if len(tracker.flips) != 0 || len(tracker.completed) != 0 {
		t.Errorf("the tracker keeps %d flips and %d summaries, want none", len(tracker.flips), len(tracker.completed))
	}
}
