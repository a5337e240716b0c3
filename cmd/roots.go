package main

// The image has no CA certificates of its own (docs/install.md): the
// manager carries Mozilla's roots, used when the system has none, so that
// HTTPS probes verify their endpoints in an empty image too.
import _ "golang.org/x/crypto/x509roots/fallback"
