package decision

import (
	"testing"
	"time"
)

func TestFormatAfter(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0.00s"},
		{40 * time.Millisecond, "0.04s"},
		{2310 * time.Millisecond, "2.31s"},
		{90 * time.Second, "90.00s"},
	} {
		if got := FormatAfter(tc.d); got != tc.want {
			t.Errorf("FormatAfter(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
