package postgrestest

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// LogConnections turns log_connections on (ALTER SYSTEM, then a reload): from then on every session the
// server authorizes is a line of its log, which Activity counts as a login. Sessions already open are
// not logged again.
func (s *Server) LogConnections(ctx context.Context) error {
	conn, err := s.Connect(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET log_connections = on"); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	// pg_reload_conf only signals the postmaster: wait until a new session has the setting, or the next
	// login could go unlogged and a count of logins read one short.
	if v, err := s.awaitSetting(ctx, "log_connections", "on"); err != nil || v != "on" {
		return cmp.Or(err, fmt.Errorf("log_connections is still %q 10s after the reload", v))
	}
	return nil
}

// awaitSetting waits, at most 10 s, until a new session shows setting as want, and returns the value the
// last session showed: a reload (pg_reload_conf) only signals the postmaster, and the sessions it starts
// next take the new value a moment later.
func (s *Server) awaitSetting(ctx context.Context, setting, want string) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		fresh, err := s.Connect(ctx)
		if err != nil {
			return "", err
		}
		var v string
		err = fresh.QueryRow(ctx, "SHOW "+setting).Scan(&v)
		_ = fresh.Close(ctx)
		if err != nil || v == want || time.Now().After(deadline) {
			return v, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Activity is what the server's log says its clients did, counted line by line.
type Activity struct {
	// Logins are the sessions the server authorized ("connection authorized", with LogConnections).
	Logins int
	// Statements are the statements run (log_statement=all), BEGIN and COMMIT included; Writes are those
	// of them that change the server (Statement.IsWrite).
	Statements, Writes int
}

// connectionLine is log_connections' line for a session that logged in.
var connectionLine = regexp.MustCompile(`LOG:  connection authorized: `)

// Activity counts the logins and statements logged from offset (a LogSize value), leaving out those of
// the sessions of user except (the bench's or test's own superuser sessions, say; empty leaves out
// nothing). It returns the offset of the end of the last whole line it read: the offset of the next call,
// so that successive calls count each line once while the server writes on.
func (s *Server) Activity(offset int64, except string) (Activity, int64, error) {
	var a Activity
	f, err := os.Open(s.LogFile)
	if err != nil {
		return a, offset, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, 0); err != nil {
		return a, offset, err
	}
	r := bufio.NewReaderSize(f, 1<<16)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			// A line without its newline is still being written: the next call reads it whole.
			return a, offset, nil
		}
		offset += int64(len(line))
		line = strings.TrimSuffix(line, "\n")
		if except != "" && sessionUser(line) == except {
			continue
		}
		switch {
		case connectionLine.MatchString(line):
			a.Logins++
		default:
			if m := statementLine.FindStringSubmatch(line); m != nil {
				a.Statements++
				if (Statement{SQL: m[1]}).IsWrite() {
					a.Writes++
				}
			}
		}
	}
}

// sessionUser is the user of a log line, from the prefix "2026-01-01 00:00:00.000 UTC [pid] user@db ";
// empty for a line without one (the server's own, or a statement's continuation line).
func sessionUser(line string) string {
	i := strings.Index(line, "] ")
	if i < 0 {
		return ""
	}
	ud, _, ok := strings.Cut(line[i+2:], " ")
	if !ok {
		return ""
	}
	u, _, ok := strings.Cut(ud, "@")
	if !ok {
		return ""
	}
	return u
}
