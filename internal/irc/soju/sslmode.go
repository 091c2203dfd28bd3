package soju

import (
	"fmt"
	"slices"
	"strings"

	"github.com/platform-operator/platform-operator/internal/postgres"
)

// DriverSSLModes are the sslmode values soju's PostgreSQL driver, github.com/lib/pq, accepts (besides
// empty, its require). It refuses prefer and allow, libpq's modes that leave TLS to the server.
var DriverSSLModes = []string{"disable", "require", "verify-ca", "verify-full"}

// SSLModeError is an sslmode that cannot be given to soju as it is.
type SSLModeError struct {
	// Mode is the admin connection's sslmode.
	Mode string
	// Unseen is true for prefer or allow before any session to the server told whether it uses TLS.
	Unseen bool
}

func (e *SSLModeError) Error() string {
	if e.Unseen {
		return fmt.Sprintf("sslmode %q leaves TLS to the server, and no session to it has told yet whether it uses TLS", e.Mode)
	}
	return fmt.Sprintf("sslmode %q is not one soju's driver accepts (%s)", e.Mode, strings.Join(DriverSSLModes, ", "))
}

// DriverSSLMode is the sslmode soju is given for a login whose sslmode is mode, when the operator's own
// session with mode was seen to run over seen. The modes lib/pq knows pass through. prefer and allow
// (and empty, libpq's prefer) become what they came to on this server: require when the operator's
// session negotiated TLS, disable when it did not. lib/pq's require checks no certificate, as libpq's
// prefer does without a root certificate, so soju gets the protection the operator got. Before any
// session (seen is TransportUnknown) prefer and allow have no answer: an *SSLModeError, never a value
// lib/pq refuses.
func DriverSSLMode(mode string, seen postgres.Transport) (string, error) {
	switch {
	case slices.Contains(DriverSSLModes, mode):
		return mode, nil
	case mode != "" && mode != "prefer" && mode != "allow":
		return "", &SSLModeError{Mode: mode}
	case seen == postgres.TransportTLS:
		return "require", nil
	case seen == postgres.TransportPlain:
		return "disable", nil
	default:
		return "", &SSLModeError{Mode: mode, Unseen: true}
	}
}

// DriverLogin is login as soju's config carries it: its sslmode made one lib/pq accepts by
// DriverSSLMode.
func DriverLogin(login postgres.Settings, seen postgres.Transport) (postgres.Settings, error) {
	mode, err := DriverSSLMode(login.SSLMode, seen)
	if err != nil {
		return postgres.Settings{}, err
	}
	login.SSLMode = mode
	return login, nil
}
