//go:build tools

// Package kwok only records, for `go mod tidy`, the command this module builds.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
