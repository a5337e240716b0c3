package suite

import (
	"net/http"
	"strings"
	"testing"
)

// A request to the sink's port but not to its URL (another test's
// notifier, still retrying at a port this sink took over) is answered 404
// and not recorded; one to its URL is.
func TestSinkRecordsOnlyItsOwnURL(t *testing.T) {
	s := NewSink(t)
	base := "http://" + s.Listener.Addr().String()
	for _, tc := range []struct {
		url        string
		wantStatus int
		wantCount  int
	}{
		{base + "/", http.StatusNotFound, 0},
		{base + "/sink-someone-else", http.StatusNotFound, 0},
		{s.URL, http.StatusOK, 1},
	} {
		resp, err := http.Post(tc.url, "application/cloudevents+json", strings.NewReader(`{"id":"1","type":"t"}`))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.wantStatus {
			t.Errorf("POST %s: %d, want %d", tc.url, resp.StatusCode, tc.wantStatus)
		}
		if got := len(s.Requests()); got != tc.wantCount {
			t.Errorf("after POST %s: %d requests recorded, want %d", tc.url, got, tc.wantCount)
		}
	}
}
