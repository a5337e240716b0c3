package secrets

import (
	"errors"
	"strings"
	"testing"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

func TestSecretKeyValue(t *testing.T) {
	data := map[string][]byte{
		"authorization": []byte("Bearer s3cr3t"),
		"empty":         {},
		"longest":       []byte(strings.Repeat("x", probe.MaxSecretValueBytes)),
		"too-long":      []byte(strings.Repeat("x", probe.MaxSecretValueBytes+1)),
	}
	for _, tt := range []struct {
		key, want string
		wantErr   error
	}{
		{"authorization", "Bearer s3cr3t", nil},
		{"empty", "", nil},
		{"longest", strings.Repeat("x", probe.MaxSecretValueBytes), nil},
		{"too-long", "", errTooLong},
		{"missing", "", errNoKey},
	} {
		got, err := secretKeyValue(data, tt.key)
		if got != tt.want || !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
			t.Errorf("secretKeyValue(%q) = %d bytes, %v; want %d bytes, %v", tt.key, len(got), err, len(tt.want), tt.wantErr)
		}
	}
	if errTooLong.Error() != "the value is longer than 4096 bytes" || errNoKey.Error() != "the Secret has no such key" {
		t.Errorf("messages: %q, %q", errTooLong, errNoKey)
	}
}
