package probe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// secretValues is a Secrets over a map; a key it lacks reads as a
// missing Secret.
type secretValues map[SecretKey]string

func (s secretValues) SecretValue(_ context.Context, key SecretKey, _ time.Duration) (string, error) {
	v, ok := s[key]
	if !ok {
		return "", errors.New("the Secret does not exist")
	}
	return v, nil
}

func TestSecretHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.Header.Get("Authorization")))
	}))
	defer srv.Close()
	token := SecretKey{Namespace: "shop", Name: "flags-token", Key: "authorization"}
	secrets := secretValues{token: "Bearer s3cr3t", {Namespace: "shop", Name: "bad", Key: "k"}: "Bearer s3cr3t\n"}
	p := NewProber(Guard{}, 1024).WithSecrets(secrets)
	headers := []Header{{Name: "Authorization", FromSecret: &token}}
	got, err := p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL, Headers: headers})
	if err != nil || got.Body != "Bearer s3cr3t" {
		t.Fatalf("probe = %+v, %v; want the Secret's value sent", got, err)
	}
	if headers[0].Value != "" {
		t.Errorf("the caller's headers were changed: %+v", headers[0])
	}

	for _, tt := range []struct {
		name    string
		prober  *Prober
		key     SecretKey
		wantMsg string
	}{
		{"a missing Secret", p, SecretKey{Namespace: "shop", Name: "gone", Key: "authorization"},
			`header "Authorization" reads key "authorization" of Secret shop/gone: the Secret does not exist`},
		{"a value that is no header value", p, SecretKey{Namespace: "shop", Name: "bad", Key: "k"},
			`header "Authorization" reads key "k" of Secret shop/bad: the value is not a valid header value (no line breaks or control characters; a file saved with a final newline has one)`},
		{"a prober without Secrets", NewProber(Guard{}, 1024), token,
			`header "Authorization" reads key "authorization" of Secret shop/flags-token: this manager reads no Secrets`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := tt.key
			e := probeError(t, tt.prober, Request{Method: "GET", URL: srv.URL, Headers: []Header{{Name: "Authorization", FromSecret: &key}}})
			want := "GET " + srv.URL + ": " + tt.wantMsg
			if e.Reason != ReasonSecret || e.Message != want {
				t.Errorf("got %q (%s), want %q (secret)", e.Message, e.Reason, want)
			}
			if strings.Contains(e.Message, "s3cr3t") {
				t.Errorf("message %q shows the value", e.Message)
			}
		})
	}
}
