//go:build tools

// Package operatorsdk only records, for `go mod tidy`, the commands this module builds.
package operatorsdk

import (
	_ "github.com/operator-framework/operator-sdk/cmd/operator-sdk"
	_ "github.com/operator-framework/operator-sdk/images/scorecard-test"
)
