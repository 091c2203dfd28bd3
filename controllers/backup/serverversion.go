package backup

import (
	"context"
	"fmt"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// serverMajor connects to url (the source's own role) and returns the server's major version from
// server_version_num (160004 is 16).
func serverMajor(ctx context.Context, url string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version_num").Scan(&v); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 100000 {
		return 0, fmt.Errorf("server_version_num %q is not one of PostgreSQL 10 or newer", v)
	}
	return n / 10000, nil
}

// redactURL cuts url, and the role's password in it, out of text, should a driver error quote it.
func redactURL(text, url string) string {
	if url == "" {
		return text
	}
	text = strings.ReplaceAll(text, url, "[database url]")
	if u, err := neturl.Parse(url); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			text = strings.ReplaceAll(text, pw, "[redacted]")
		}
	}
	return text
}

// ctrlKey is the key of name in namespace.
func ctrlKey(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}
