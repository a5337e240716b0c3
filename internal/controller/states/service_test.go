package states

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestServiceSidesSince: since when a service state's count has been on
// its side of minReady: a crossing starts the clock again, staying on a
// side keeps it, and a forgotten state (its Service gone, the state
// deleted or no longer following a Service) starts afresh. This is the
// since that decision.ServiceStatus holds the answer against.
func TestServiceSidesSince(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	type look struct {
		at        time.Duration
		key       string
		available bool
		forget    bool
		service   string
	}
	looks := []look{
		{at: 0, key: "ns/a", available: true},
		{at: time.Second, key: "ns/a", available: true},
		{at: 2 * time.Second, key: "ns/a", available: false},
		{at: 3 * time.Second, key: "ns/b", available: false},
		{at: 5 * time.Second, key: "ns/a", available: false},
		{at: 6 * time.Second, key: "ns/a", available: true},
		{at: 7 * time.Second, key: "ns/a", available: false},
		{at: 8 * time.Second, key: "ns/a", forget: true},
		{at: 9 * time.Second, key: "ns/a", available: false},
		{at: 10 * time.Second, key: "ns/b", available: false},
		// ns/b now names another Service, on the same side: anew.
		{at: 11 * time.Second, key: "ns/b", available: false, service: "other"},
		{at: 12 * time.Second, key: "ns/b", available: false, service: "other"},
	}
	want := []time.Duration{0, 0, 2 * time.Second, 3 * time.Second, 2 * time.Second, 6 * time.Second, 7 * time.Second, -1, 9 * time.Second, 3 * time.Second,
		11 * time.Second, 11 * time.Second}
	var sides serviceSides
	var got []time.Duration
	for _, l := range looks {
		if l.forget {
			sides.forget(l.key)
			got = append(got, -1)
			continue
		}
		svc := types.NamespacedName{Namespace: "ns", Name: "app"}
		if l.service != "" {
			svc.Name = l.service
		}
		got = append(got, sides.since(l.key, svc, l.available, t0.Add(l.at)).Sub(t0))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("since after each look, -1 where forgotten (-want +got):\n%s", diff)
	}
}
