package postgres_test

import (
	"testing"

	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// Every statement this package builds has an operation of its own: none falls into other, so the
// label says what the operator did.
func TestPostgresStatementsClassified(t *testing.T) {
	var stmts []string
	for _, v := range []int{150000, postgres.Version16} {
		stmts = append(stmts, postgres.NewDatabaseFor(v, "db", "db", "c")...)
		stmts = append(stmts, postgres.DropFor(v, "db", true, true, true)...)
		stmts = append(stmts, postgres.GrantMembership(v, "db"))
	}
	stmts = append(stmts, postgres.CreateRole("db", "v"), postgres.SetPassword("db", "v"), postgres.CommentOnRole("db", "c"),
		postgres.SetDatabaseOwner("db", "db"))
	for _, s := range stmts {
		if op := instruments.PostgresOperation(s); op == instruments.OpOther {
			t.Errorf("%q is classified as %s", s, op)
		}
	}
}
