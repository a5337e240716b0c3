// Package secrets reads the header values that probes, served checks and
// notifications take from Secrets: a direct GET of each key named, kept
// for the rotation window, never a watch of the cluster's Secrets
// (docs/security.md, "Probe headers from Secrets").
package secrets

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
	// defaultRotationWindow is how soon a rotated Secret's value is used,
	// for a state probed at least that often: a value read less than
	// window − interval ago is reused, so the first probe after the window
	// reads the Secret again; a state probed less often reads it at every
	// probe, and so uses a rotated value at its next one. A state probed
	// every second reads its Secret twice a minute, not sixty times.
	defaultRotationWindow = 30 * time.Second
	// maxCachedSecretValues bounds the cache: each entry is one header
	// value of at most probe.MaxSecretValueBytes.
	maxCachedSecretValues = 4096
)

// Reader reads the header values of probes from Secrets with a
// direct GET, and keeps each value (or its absence) for reuse within the
// rotation window. It holds no informer: the manager never lists or
// watches the cluster's Secrets, and keeps only the values of the keys
// that probes name, each at most probe.MaxSecretValueBytes
// (docs/security.md, "Probe headers from Secrets").
type Reader struct {
	reader client.Reader
	values *cache.LRUExpireCache
	window time.Duration
	now    func() time.Time
}

// NewReader reads Secrets through reader, with a rotation window of
// window (defaultRotationWindow when 0).
func NewReader(reader client.Reader, window time.Duration) *Reader {
	if window <= 0 {
		window = defaultRotationWindow
	}
	return &Reader{reader: reader, values: cache.NewLRUExpireCache(maxCachedSecretValues), window: window, now: time.Now}
}

var _ probe.Secrets = (*Reader)(nil)

// secretLookup is a cached answer: a value, or why there is none, and
// when it was read.
type secretLookup struct {
	value string
	err   error
	read  time.Time
}

// errNoSecret, errNoKey and errTooLong are the answers worth keeping: they
// last until someone edits the Secret.
var (
	errNoSecret = errors.New("the Secret does not exist")
	errNoKey    = errors.New("the Secret has no such key")
	errTooLong  = fmt.Errorf("the value is longer than %d bytes", probe.MaxSecretValueBytes)
	// errNoNamespace: a cluster state's Secret is in the manager's
	// --cluster-resource-namespace, and the manager has none (it runs
	// outside a cluster without the flag).
	errNoNamespace = errors.New("the manager has no --cluster-resource-namespace, where cluster states' Secrets live")
)

// SecretValue returns the value of key for a state probed every
// interval: from the cache when it was read less than window − interval
// ago. Errors name no value and read the same at every attempt: a failing
// probe writes its status once.
func (s *Reader) SecretValue(ctx context.Context, key probe.SecretKey, interval time.Duration) (string, error) {
	if v, ok := s.values.Get(key); ok {
		if l := v.(secretLookup); s.now().Sub(l.read) < s.window-interval {
			return l.value, l.err
		}
	}
	l := s.read(ctx, key)
	if l.err == nil || errors.Is(l.err, errNoSecret) || errors.Is(l.err, errNoKey) || errors.Is(l.err, errTooLong) {
		s.values.Add(key, l, s.window)
	}
	return l.value, l.err
}

// read GETs the Secret and takes the one key out of it.
func (s *Reader) read(ctx context.Context, key probe.SecretKey) secretLookup {
	secret := &corev1.Secret{}
	l := secretLookup{read: s.now()}
	if key.Namespace == "" {
		l.err = errNoNamespace
		return l
	}
	err := s.reader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		l.err = errNoSecret
		return l
	case err != nil:
		// The API server's message may name a user or change between
		// attempts; its reason is one stable word.
		l.err = fmt.Errorf("the Secret could not be read (%s)", secretReadReason(err))
		return l
	}
	l.value, l.err = secretKeyValue(secret.Data, key.Key)
	return l
}

// secretKeyValue is the value of key in a Secret's data, or why a header
// cannot carry it: the key is missing, or its value is longer than
// probe.MaxSecretValueBytes.
func secretKeyValue(data map[string][]byte, key string) (string, error) {
	value, ok := data[key]
	switch {
	case !ok:
		return "", errNoKey
	case len(value) > probe.MaxSecretValueBytes:
		return "", errTooLong
	}
	return string(value), nil
}

// secretReadReason is the API server's reason for a failed read, or
// "unavailable" for a failure that never reached it.
func secretReadReason(err error) string {
	if r := apierrors.ReasonForError(err); r != "" {
		return string(r)
	}
	return "unavailable"
}
