package homelab

import (
	"testing"

	"github.com/platform-operator/platform-operator/internal/testutil/s3test"
)

// s3 is the package's S3 server (versitygw on 127.0.0.1), for the restore specs' backups.
var s3 *s3test.Server

func TestMain(m *testing.M) { s3test.Main(m, "controllers/homelab", &s3) }
