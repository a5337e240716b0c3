package decision

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// TestHistoryRecordsEachChange: every change of the response is recorded
// first, with its cause and the body's digest, the same response is not,
// losing the response is NoResponse, and 25 changes keep the last 20 with
// sequences that never repeat.
func TestHistoryRecordsEachChange(t *testing.T) {
	at := func(i int) metav1.Time { return metav1.NewTime(time.Date(2026, 11, 28, 12, 0, i, 0, time.UTC)) }
	status := v1beta1.DynamicIngressStateStatus{}
	status = WithResponse(status, "200", "ok", false, at(0), v1beta1.HistoryCauseProbe)
	status = WithResponse(status, "200", "ok", false, at(1), v1beta1.HistoryCauseProbe)
	if len(status.History) != 1 {
		t.Fatalf("history after a first response and the same again = %+v, want one entry", status.History)
	}
	if got, want := status.History[0], (v1beta1.HistoryEntry{Sequence: 1, Time: metav1.MicroTime{Time: at(0).Time}, StatusCode: "200",
		BodyDigest: "sha256:2689367b205c16ce32ed4200942b8b8b1e262dfc70d9bc9fbc77c49699a4f1df", Cause: "Probe"}); got != want {
		t.Errorf("first entry = %+v, want %+v", got, want)
	}
	status = WithResponse(status, "", "", false, at(2), v1beta1.HistoryCauseProbe)
	if got := status.History[0]; got.Sequence != 2 || got.Cause != "NoResponse" || got.StatusCode != "" || got.BodyDigest != "" {
		t.Errorf("entry for a lost response = %+v, want sequence 2, NoResponse, no code, no digest", got)
	}
	for i := range 25 {
		status = WithResponse(status, "503", fmt.Sprint(i), false, at(3+i), v1beta1.HistoryCauseFixed)
	}
	if len(status.History) != v1beta1.MaxHistory {
		t.Fatalf("history holds %d entries after 27 changes, want %d", len(status.History), v1beta1.MaxHistory)
	}
	for i, e := range status.History {
		if want := int64(27 - i); e.Sequence != want {
			t.Errorf("history[%d].sequence = %d, want %d (newest first, never repeated)", i, e.Sequence, want)
		}
	}
}
