package postgres

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Keys of a PostgresConnection's Secret, and of the Secret made for a PostgresDatabase.
const (
	KeyHost     = "host"
	KeyPort     = "port"
	KeyUser     = "user"
	KeyPassword = "password"
	KeySSLMode  = "sslmode"
	KeyDatabase = "database"
	KeyURL      = "url"
)

// DefaultSSLMode is libpq's default: TLS when the server offers it.
const DefaultSSLMode = "prefer"

// DefaultDatabase is the database the operator connects to when the Secret names none.
const DefaultDatabase = "postgres"

// SSLModes are the sslmode values libpq and pgx accept.
var SSLModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// Settings say how to reach a server and log in.
type Settings struct {
	Host     string
	Port     int
	User     string
	Password string
	SSLMode  string
	Database string
}

// SecretError is a Secret that lacks a key or holds a value that cannot be used. Its message names the
// keys, never a value.
type SecretError struct {
	Missing []string
	Invalid []string
}

func (e *SecretError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "missing keys "+strings.Join(e.Missing, ", "))
	}
	if len(e.Invalid) > 0 {
		parts = append(parts, strings.Join(e.Invalid, "; "))
	}
	return strings.Join(parts, "; ")
}

// SettingsFromSecret reads host, port, user, password and the optional sslmode and database from a
// Secret's data. Values are trimmed of surrounding whitespace, except the password, taken as is.
func SettingsFromSecret(data map[string][]byte) (Settings, error) {
	var e SecretError
	get := func(k string, required bool) string {
		v, ok := data[k]
		if k != KeyPassword {
			v = []byte(strings.TrimSpace(string(v)))
		}
		if required && (!ok || len(v) == 0) {
			e.Missing = append(e.Missing, k)
		}
		return string(v)
	}
	s := Settings{
		Host: get(KeyHost, true), User: get(KeyUser, true), Password: get(KeyPassword, true),
		SSLMode: get(KeySSLMode, false), Database: get(KeyDatabase, false),
	}
	if port := get(KeyPort, true); port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			e.Invalid = append(e.Invalid, "port must be a number between 1 and 65535")
		}
		s.Port = p
	}
	if s.SSLMode == "" {
		s.SSLMode = DefaultSSLMode
	} else if !slices.Contains(SSLModes, s.SSLMode) {
		e.Invalid = append(e.Invalid, "sslmode must be one of "+strings.Join(SSLModes, ", "))
	}
	if s.Database == "" {
		s.Database = DefaultDatabase
	}
	if len(e.Missing) > 0 || len(e.Invalid) > 0 {
		return Settings{}, &e
	}
	return s, nil
}

// As is s for another login and database on the same server.
func (s Settings) As(user, password, database string) Settings {
	s.User, s.Password, s.Database = user, password, database
	return s
}

// ConnConfig is s as a pgx configuration. It reads no PG* environment variable or password file into
// the values s sets.
func (s Settings) ConnConfig() (*pgx.ConnConfig, error) {
	kv := fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=%s connect_timeout=10",
		quoteValue(s.Host), s.Port, quoteValue(s.User), quoteValue(s.Password), quoteValue(s.Database), quoteValue(s.SSLMode))
	cfg, err := pgx.ParseConfig(kv)
	if err != nil {
		// pgx's parse errors may quote the connection string: say which setting, not what it held.
		return nil, fmt.Errorf("invalid connection settings for %s:%d", s.Host, s.Port)
	}
	return cfg, nil
}

// URL is s as a postgresql:// URL, the form most applications take (DATABASE_URL).
func (s Settings) URL() string {
	u := url.URL{
		Scheme:   "postgresql",
		User:     url.UserPassword(s.User, s.Password),
		Host:     hostPort(s.Host, s.Port),
		Path:     "/" + s.Database,
		RawQuery: url.Values{"sslmode": {s.SSLMode}}.Encode(),
	}
	return u.String()
}

func hostPort(host string, port int) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

// quoteValue is a libpq keyword/value connection string value in single quotes.
func quoteValue(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
