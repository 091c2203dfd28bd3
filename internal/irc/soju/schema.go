package soju

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// soju records its PostgreSQL schema's version in table "Config" (one row, id 1, column version): the
// number of migrations the release knows (database/postgres_migrations.go). At start it reads the row and
// exits with "soju (version N) older than schema (version M)" when M is higher, writing nothing; a lower
// version it migrates, none at all it initializes. schemaVersions are those numbers by release tag, read
// from soju's source at each tag.
var schemaVersions = map[string]int{
	"v0.8.0":  14,
	"v0.8.1":  14,
	"v0.8.2":  14,
	"v0.9.0":  17,
	"v0.10.0": 18,
	"v0.10.1": 18,
}

// SchemaVersion is the database schema version the soju of image knows, from the image's tag; false for a
// tag not in the table (another build, a digest only): its schema is not known to the operator.
func SchemaVersion(image string) (int, bool) {
	if image == "" {
		image = DefaultImage
	}
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return 0, false
	}
	v, ok := schemaVersions[image[i+1:]]
	return v, ok
}

// SchemaOf is the soju schema version a database records ("Config".version, read as its role), and false
// when it records none (no table "Config": soju never ran on it, and initializes it at its first start).
func SchemaOf(ctx context.Context, conn *pgx.Conn) (int, bool, error) {
	var table *string
	if err := conn.QueryRow(ctx, `SELECT to_regclass('"Config"')::text`).Scan(&table); err != nil {
		return 0, false, err
	}
	if table == nil {
		return 0, false, nil
	}
	var version int
	switch err := conn.QueryRow(ctx, `SELECT version FROM "Config" WHERE id = 1`).Scan(&version); {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	return version, true, nil
}

// SchemaTooNew says why a database recording schema version found cannot be handed to the soju of image,
// or "" when it can: soju refuses a schema newer than its own. A database without a version, or an image
// whose version is not known, passes (soju itself still refuses a newer schema at start, without writing).
func SchemaTooNew(image string, found int, recorded bool) string {
	known, ok := SchemaVersion(image)
	if !recorded || !ok || found <= known {
		return ""
	}
	if image == "" {
		image = DefaultImage
	}
	return fmt.Sprintf("the backup's soju database schema is version %d (table \"Config\"), newer than version %d of the image %s: soju refuses a newer schema, so it is not started on it; run a soju that knows schema %d (the operator's --soju-image), then delete this SojuBouncer and create it again", found, known, image, found)
}
