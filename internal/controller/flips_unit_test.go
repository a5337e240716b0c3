package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/notify"
)

// TestFlipProgress: a flip in progress tells a notifier how many
// followers do not show it yet, in every namespace, and names the first
// ten of its own namespace only; once complete, there is none, and the
// summary counts the namespaces.
func TestFlipProgress(t *testing.T) {
	tracker := newFlipTracker(1, time.Now)
	var keys []types.NamespacedName
	for i := range 12 {
		keys = append(keys, types.NamespacedName{Namespace: "shop", Name: fmt.Sprintf("web-%02d", 11-i)})
	}
	keys = append(keys, types.NamespacedName{Namespace: "blog", Name: "a"})
	tracker.expect("/global", "503", "", "DynamicIngress", keys)

	want := &notify.FlipProgress{Remaining: 13, Names: []string{
		"DynamicIngress/web-00", "DynamicIngress/web-01", "DynamicIngress/web-02", "DynamicIngress/web-03", "DynamicIngress/web-04",
		"DynamicIngress/web-05", "DynamicIngress/web-06", "DynamicIngress/web-07", "DynamicIngress/web-08", "DynamicIngress/web-09"}}
	if diff := cmp.Diff(want, tracker.progress("/global", "shop")); diff != "" {
		t.Errorf("progress for shop (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&notify.FlipProgress{Remaining: 13, Names: []string{"DynamicIngress/a"}}, tracker.progress("/global", "blog")); diff != "" {
		t.Errorf("progress for blog (-want +got):\n%s", diff)
	}
	for _, k := range keys {
		tracker.settled("/global", "503", "", switchID{kind: "DynamicIngress", key: k})
	}
	if p := tracker.progress("/global", "shop"); p != nil {
		t.Errorf("progress after every follower settled = %+v, want none", p)
	}
	if done := tracker.completed["/global"]; done.summary.Followers != 13 || done.summary.Namespaces != 2 {
		t.Errorf("summary = %+v, want 13 followers in 2 namespaces", done.summary)
	}
}
