package switches

import (
	"testing"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// TestKeepPendingEntries: an entry whose verdict is pending keeps the
// verdict the status shows; without one it stays pending.
func TestKeepPendingEntries(t *testing.T) {
	shown := []v1beta1.EntryStatus{{Name: "platform", Matched: "False", Reason: "NotMatched"}, {Name: "window", Matched: "True", Reason: "Matched"}}
	got := keepPendingEntries([]v1beta1.EntryStatus{
		{Name: "platform", Matched: "True", Reason: "Matched"},
		{Name: "window", Matched: "Unknown", Reason: "VerdictPending"},
		{Name: "new", Matched: "Unknown", Reason: "VerdictPending"},
	}, shown)
	want := []v1beta1.EntryStatus{{Name: "platform", Matched: "True", Reason: "Matched"}, {Name: "window", Matched: "True", Reason: "Matched"},
		{Name: "new", Matched: "Unknown", Reason: "VerdictPending"}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
