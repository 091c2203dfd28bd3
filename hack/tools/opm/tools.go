//go:build tools

// Package opm only records, for `go mod tidy`, the command this module builds.
package opm

import (
	_ "github.com/operator-framework/operator-registry/cmd/opm"
)
