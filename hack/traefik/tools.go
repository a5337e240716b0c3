//go:build traefik

// Package traefik pins the Traefik proxy that the end-to-end tests and the
// demo run as their data plane. The Makefile builds it from this module into
// bin/; nothing imports it.
package traefik

import _ "github.com/traefik/traefik/v3/cmd/traefik"
