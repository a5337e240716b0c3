package writes

import (
	"fmt"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

func TestOwnWrites(t *testing.T) {
	ing := func(name, rv string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: rv}}
	}
	di := func(name, rv string) *v1beta1.DynamicIngress {
		return &v1beta1.DynamicIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: rv}}
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	w := NewOwnWrites(clk)

	if !w.CacheHolds(ing("a", "5")) {
		t.Error("an object never written must count as fresh")
	}
	w.Wrote(ing("a", "10"))
	if w.CacheHolds(ing("a", "9")) {
		t.Error("a cached version older than our write counts as fresh")
	}
	if w.CacheHolds(ing("a", "9")) {
		t.Error("asking twice forgot the write")
	}
	if !w.CacheHolds(di("a", "9")) {
		t.Error("a write to an Ingress made a DynamicIngress of the same name look stale")
	}
	if !w.CacheHolds(ing("a", "10")) {
		t.Error("the very version written does not count as fresh")
	}
	if w.len() != 0 {
		t.Errorf("%d writes remembered after the cache caught up, want 0", w.len())
	}
	// Versions compare as numbers, not strings.
	w.Wrote(ing("b", "99"))
	if !w.CacheHolds(ing("b", "100")) {
		t.Error("version 100 does not count as newer than 99")
	}

	// A deletion is held once the object is gone or replaced: the same
	// version is the object that was deleted.
	w.Deleted(ing("c", "20"))
	if w.CacheHolds(ing("c", "20")) {
		t.Error("the deleted object itself counts as fresh")
	}
	if !w.CacheHolds(ing("c", "21")) {
		t.Error("a newer object after a deletion does not count as fresh")
	}

	// Not found: forget.
	w.Wrote(ing("d", "30"))
	w.Forget(&networkingv1.Ingress{}, types.NamespacedName{Namespace: "shop", Name: "d"})
	if w.len() != 0 {
		t.Error("forget kept the write")
	}

	// A cache that never catches up is trusted again after maxCacheLag.
	w.Wrote(ing("e", "40"))
	clk.SetTime(clk.Now().Add(MaxCacheLag + time.Second))
	if !w.CacheHolds(ing("e", "39")) {
		t.Error("a write older than maxCacheLag still holds the object back")
	}

	// Versions that are not numbers cannot be compared: the cache is trusted.
	w.Wrote(ing("f", "abc"))
	if !w.CacheHolds(ing("f", "abb")) {
		t.Error("an incomparable version held the object back")
	}
}

// TestOwnWritesBackOff: while the cache lags behind a write (a watch that
// broke), a reconcile looks again sooner at first and then less often, so
// an object is reconciled about twenty times before maxCacheLag, not every
// 20ms (five hundred times).
func TestOwnWritesBackOff(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	w := NewOwnWrites(clk)
	stale := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "a", ResourceVersion: "9"}}
	w.Wrote(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "a", ResourceVersion: "10"}})

	var delays []time.Duration
	for !w.CacheHolds(stale) {
		d := w.RetryAfter(stale)
		delays = append(delays, d)
		clk.SetTime(clk.Now().Add(d))
		if len(delays) > 1000 {
			break
		}
	}
	if delays[0] != cacheLagRetry {
		t.Errorf("first retry after %v, want %v: the usual lag is milliseconds", delays[0], cacheLagRetry)
	}
	if n := len(delays); n > 25 {
		t.Errorf("a cache lagging for %v was looked at %d times, want at most 25 (first delays %v)", MaxCacheLag, n, delays[:min(n, 8)])
	}
	for _, d := range delays {
		if d > maxCacheLagRetry {
			t.Errorf("a retry waited %v, more than %v", d, maxCacheLagRetry)
		}
	}
}

func TestLagRetry(t *testing.T) {
	for _, tc := range []struct {
		waited, want time.Duration
	}{
		{0, 20 * time.Millisecond},
		{5 * time.Millisecond, 20 * time.Millisecond},
		{50 * time.Millisecond, 50 * time.Millisecond},
		{400 * time.Millisecond, 400 * time.Millisecond},
		{3 * time.Second, time.Second},
	} {
		if got := lagRetry(tc.waited); got != tc.want {
			t.Errorf("lagRetry(%v) = %v, want %v", tc.waited, got, tc.want)
		}
	}
}

// TestOwnWritesPrune: writes no reconcile looks at again (a switch's status
// write, at rest) are dropped once older than MaxCacheLag, when CacheHolds
// would count them as held anyway; younger ones are kept.
func TestOwnWritesPrune(t *testing.T) {
	ing := func(name, rv string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: rv}}
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	w := NewOwnWrites(clk)
	for i := range 100 {
		w.Wrote(ing(fmt.Sprintf("old-%d", i), "10"))
	}
	clk.SetTime(clk.Now().Add(MaxCacheLag / 2))
	w.Wrote(ing("young", "20"))
	w.Prune()
	if w.len() != 101 {
		t.Fatalf("%d writes remembered after a prune before any is MaxCacheLag old, want 101", w.len())
	}
	clk.SetTime(clk.Now().Add(MaxCacheLag/2 + time.Second))
	w.Prune()
	if w.len() != 1 {
		t.Fatalf("%d writes remembered after a prune, want 1 (the one younger than MaxCacheLag)", w.len())
	}
	if w.peak != 1 {
		t.Errorf("after a prune that left 1 of 101 writes the map still has room for %d: it must be made anew", w.peak)
	}
	if w.CacheHolds(ing("young", "19")) {
		t.Error("the young write was forgotten: a cache older than it counts as holding it")
	}
	// A write made after MaxCacheLag since the last prune prunes too.
	clk.SetTime(clk.Now().Add(MaxCacheLag + time.Second))
	w.Wrote(ing("later", "30"))
	if w.len() != 1 {
		t.Errorf("%d writes remembered after a write past the prune time, want 1 (the new one)", w.len())
	}
}
