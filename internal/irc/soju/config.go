package soju

import (
	"fmt"
	"slices"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

const (
	configDir  = "/etc/soju"
	configPath = configDir + "/" + ConfigKey
	tlsCert    = configDir + "/tls/tls.crt"
	tlsKey     = configDir + "/tls/tls.key"
)

// ListenURI is a listener's soju listen address: ircs:// for TLS, irc+insecure:// otherwise, followed by
// the listener's "[host]:port".
func ListenURI(l ircv1.Listener) string {
	if l.TLS {
		return "ircs://" + l.Address
	}
	return "irc+insecure://" + l.Address
}

// Config is soju's config for b as directives: a listen per listener (and one for the metrics endpoint
// when b enables it), hostname, title, the certificate
// paths when b has spec.tls, the database (db is the role's login as DriverLogin makes it, its sslmode
// one soju's driver accepts; its password is left out and reaches soju through PGPASSWORD) and the
// message store in the database.
func Config(b *ircv1.SojuBouncer, db postgres.Settings) []Directive {
	var ds []Directive
	for _, l := range b.Spec.Listeners {
		ds = append(ds, Directive{Name: "listen", Params: []string{ListenURI(l)}})
	}
	if MetricsEnabled(b) {
		ds = append(ds, Directive{Name: "listen", Params: []string{MetricsListenURI(b)}})
	}
	ds = append(ds, Directive{Name: "hostname", Params: []string{b.Spec.Hostname}})
	if b.Spec.Title != "" {
		ds = append(ds, Directive{Name: "title", Params: []string{b.Spec.Title}})
	}
	if b.Spec.TLS != nil {
		ds = append(ds, Directive{Name: "tls", Params: []string{tlsCert, tlsKey}})
	}
	ds = append(ds,
		Directive{Name: "db", Params: []string{"postgres", db.ConnInfo()}},
		Directive{Name: "message-store", Params: []string{"db"}},
	)
	return ds
}

// RenderConfig is Config encoded as soju reads it. A db whose sslmode soju's driver would refuse is an
// error: soju would not start on it.
func RenderConfig(b *ircv1.SojuBouncer, db postgres.Settings) ([]byte, error) {
	if !slices.Contains(DriverSSLModes, db.SSLMode) {
		return nil, fmt.Errorf("render soju config: %w", &SSLModeError{Mode: db.SSLMode})
	}
	out, err := Encode(Config(b, db))
	if err != nil {
		return nil, fmt.Errorf("render soju config: %w", err)
	}
	return out, nil
}
