package backup

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The facts a put records in the manifest (Manifest.Facts) for a drill to compare against. The keys and
// their values are part of the manifest's format: controllers read them too.
const (
	// FactPgTables is a pg_dump-custom artifact's tables and their row counts, counted in the snapshot
	// the dump was taken from: a JSON array of PgTable, ordered by schema and name.
	FactPgTables = "pg.tables"
	// FactPgDatabase is the dumped database's name.
	FactPgDatabase = "pg.database"
	// FactPgServerVersionNum is the server's server_version_num when the dump was taken.
	FactPgServerVersionNum = "pg.serverVersionNum"
)

// PgTable is one table of FactPgTables.
type PgTable struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	Rows   int64  `json:"rows"`
}

// String is the table's qualified name, each part quoted as SQL quotes identifiers.
func (t PgTable) String() string { return quoteIdent(t.Schema) + "." + quoteIdent(t.Name) }

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// PgTablesOf reads FactPgTables from facts; ok is false when the fact is absent.
func PgTablesOf(facts map[string]string) (tables []PgTable, ok bool, err error) {
	doc, ok := facts[FactPgTables]
	if !ok {
		return nil, false, nil
	}
	if err := json.Unmarshal([]byte(doc), &tables); err != nil {
		return nil, true, fmt.Errorf("fact %s: %w", FactPgTables, err)
	}
	return tables, true, nil
}
