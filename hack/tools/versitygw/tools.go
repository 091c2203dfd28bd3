//go:build tools

// Package versitygw only records, for `go mod tidy`, the command this module builds: versitygw's own
// entry point, which the backup tests start as `versitygw posix DIR` (internal/testutil/s3test).
package versitygw

import (
	_ "github.com/versity/versitygw/cmd/versitygw"
)
