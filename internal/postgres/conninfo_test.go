package postgres

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestConnInfo(t *testing.T) {
	// pgx fills a missing password from the environment and the password file: neither may answer here.
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGPASSFILE", t.TempDir()+"/none")
	tests := []Settings{
		{Host: "db.example.com", Port: 5432, User: "soju_x", Password: "s3cret", Database: "soju_x", SSLMode: "require"},
		{Host: "127.0.0.1", Port: 1, User: `o'brien \ co`, Password: "p' w", Database: "a b", SSLMode: "disable"},
	}
	for _, s := range tests {
		ci := s.ConnInfo()
		if strings.Contains(ci, "password") || strings.Contains(ci, s.Password) {
			t.Errorf("ConnInfo %q carries the password", ci)
		}
		// pgx parses the libpq format; the values must come back as they went in.
		cfg, err := pgx.ParseConfig(ci)
		if err != nil {
			t.Fatalf("ParseConfig(%q): %v", ci, err)
		}
		if cfg.Host != s.Host || int(cfg.Port) != s.Port || cfg.User != s.User || cfg.Database != s.Database || cfg.Password != "" {
			t.Errorf("ConnInfo %q reads back as host %q port %d user %q dbname %q password %q", ci, cfg.Host, cfg.Port, cfg.User, cfg.Database, cfg.Password)
		}
	}
}
