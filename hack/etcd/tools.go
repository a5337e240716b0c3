//go:build controlplane

// Package etcd pins the etcd server that the tests and the demo run.
// The Makefile builds it from this module into bin/; nothing imports it.
package etcd

import _ "go.etcd.io/etcd/server/v3"
