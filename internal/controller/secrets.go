package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

const (
	// defaultSecretValueTTL is how long a header value read from a Secret
	// is reused: a rotated Secret is used within max(interval, 30s), and
	// a state probed every second reads its Secret twice a minute, not
	// sixty times.
	defaultSecretValueTTL = 30 * time.Second
	// maxCachedSecretValues bounds the cache: each entry is one header
	// value of at most probe.MaxSecretValueBytes.
	maxCachedSecretValues = 4096
)

// secretReader reads the header values of probes from Secrets with a
// direct GET, and keeps each value (or its absence) for ttl. It
// holds no informer: the manager never lists or watches the cluster's
// Secrets, and keeps only the values of the keys that probes name
// (docs/security.md, "Probe headers from Secrets").
type secretReader struct {
	reader client.Reader
	values *cache.LRUExpireCache
	ttl    time.Duration
}

// newSecretReader reads Secrets through reader, keeping values for ttl
// (defaultSecretValueTTL when 0).
func newSecretReader(reader client.Reader, ttl time.Duration) *secretReader {
	if ttl <= 0 {
		ttl = defaultSecretValueTTL
	}
	return &secretReader{reader: reader, values: cache.NewLRUExpireCache(maxCachedSecretValues), ttl: ttl}
}

var _ probe.Secrets = (*secretReader)(nil)

// secretLookup is a cached answer: a value, or why there is none.
type secretLookup struct {
	value string
	err   error
}

// errNoSecret and errNoKey are the answers worth keeping: the Secret is
// missing until someone creates it, whatever the probe's interval.
var (
	errNoSecret = errors.New("the Secret does not exist")
	errNoKey    = errors.New("the Secret has no such key")
)

// SecretValue returns the value of key, from the cache when it was read
// less than its ttl ago. Errors name no value and read the same at
// every attempt: a failing probe writes its status once.
func (s *secretReader) SecretValue(ctx context.Context, key probe.SecretKey) (string, error) {
	if v, ok := s.values.Get(key); ok {
		l := v.(secretLookup)
		return l.value, l.err
	}
	l := s.read(ctx, key)
	if l.err == nil || errors.Is(l.err, errNoSecret) || errors.Is(l.err, errNoKey) {
		s.values.Add(key, l, s.ttl)
	}
	return l.value, l.err
}

// read GETs the Secret and takes the one key out of it.
func (s *secretReader) read(ctx context.Context, key probe.SecretKey) secretLookup {
	secret := &corev1.Secret{}
	err := s.reader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return secretLookup{err: errNoSecret}
	case err != nil:
		// The API server's message may name a user or change between
		// attempts; its reason is one stable word.
		return secretLookup{err: fmt.Errorf("the Secret could not be read (%s)", secretReadReason(err))}
	}
	value, ok := secret.Data[key.Key]
	if !ok {
		return secretLookup{err: errNoKey}
	}
	return secretLookup{value: string(value)}
}

// secretReadReason is the API server's reason for a failed read, or
// "unavailable" for a failure that never reached it.
func secretReadReason(err error) string {
	if r := apierrors.ReasonForError(err); r != "" {
		return string(r)
	}
	return "unavailable"
}
