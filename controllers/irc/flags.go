package irc

import (
	"flag"
	"fmt"
	"os"

	"github.com/platform-operator/platform-operator/internal/postgres"
)

// Flags are the irc group's command-line flags (docs/soju.md); BindFlags binds them and Options reads
// them once the command line is parsed.
type Flags struct {
	sojuDatabaseSecret, sojuDatabaseNamespaces *string
}

// BindFlags defines the irc flags on fs.
func BindFlags(fs *flag.FlagSet) *Flags {
	return &Flags{
		sojuDatabaseSecret:     fs.String("soju-database-secret", "", "Admin connection Secret of SojuBouncer databases, as namespace/name (keys host, port, user, password and the optional sslmode and database), for bouncers without spec.database.adminSecretName; empty: those report AdminConnectionNotConfigured (docs/soju.md)."),
		sojuDatabaseNamespaces: fs.String("soju-database-namespaces", "", "Comma-separated namespaces, besides the --soju-database-secret Secret's own, whose SojuBouncers may use that admin connection; * allows every namespace; empty: the Secret's namespace only (others report AdminConnectionNotAllowed, docs/soju.md)."),
	}
}

// Options are the group's options from the parsed flags and the images OLM sets (RELATED_IMAGE_ERGO,
// RELATED_IMAGE_SOJU), with workers objects of each kind reconciled at once.
func (f *Flags) Options(workers int) (Options, error) {
	secret, err := ParseAdminSecret(*f.sojuDatabaseSecret)
	if err != nil {
		return Options{}, fmt.Errorf("--soju-database-secret: %w", err)
	}
	namespaces, err := postgres.ParseNamespaces(*f.sojuDatabaseNamespaces)
	if err != nil {
		return Options{}, fmt.Errorf("--soju-database-namespaces: %w", err)
	}
	return Options{ErgoImage: os.Getenv("RELATED_IMAGE_ERGO"), SojuImage: os.Getenv("RELATED_IMAGE_SOJU"),
		MaxConcurrentReconciles: workers, SojuAdminSecret: secret, SojuAdminNamespaces: namespaces}, nil
}
