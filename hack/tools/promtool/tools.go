//go:build tools

// Package promtool only records, for `go mod tidy`, the command this module builds besides metricnames.
package promtool

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
