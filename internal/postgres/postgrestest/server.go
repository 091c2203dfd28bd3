// Package postgrestest runs a real PostgreSQL server for tests, the demo and benchmarks: the machine's
// initdb and postgres binaries (Debian's postgresql package; `make postgres` installs it), or a given major
// version's (StartVersion: the PostgreSQL 16 and 17 servers `make postgres-versions` installs), a temporary data
// directory, TCP on 127.0.0.1 with a free port, a superuser with a password, and every statement logged
// (log_statement=all) into a file the caller can read. One server per test package: start it in TestMain or
// BeforeSuite and Stop it at the end. The server dies with the process that started it (SIGQUIT on parent
// death), so a crashed test leaves no postgres behind.
package postgrestest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// Superuser is the name of the server's superuser.
const Superuser = "postgres"

// Server is one running PostgreSQL server.
type Server struct {
	// Host is 127.0.0.1.
	Host string
	// Port is the TCP port the server listens on.
	Port int
	// User and Password are the superuser's credentials.
	User, Password string
	// LogFile holds the server's log: every statement, as log_statement=all writes it.
	LogFile string

	dir  string
	cmd  *exec.Cmd
	done chan error
	once sync.Once
}

// BinDir is the directory holding initdb and postgres: $POSTGRES_BIN when set, else the newest
// /usr/lib/postgresql/<version>/bin, else the directory of initdb on PATH.
func BinDir() (string, error) {
	if d := os.Getenv("POSTGRES_BIN"); d != "" {
		return d, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	if len(matches) > 0 {
		return filepath.Dir(matches[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("postgrestest: no initdb found (install PostgreSQL with `make postgres`, or set POSTGRES_BIN)")
}

// VersionBinDir is the directory holding initdb and postgres of PostgreSQL major: $POSTGRES<major>_BIN
// (the Makefile exports POSTGRES16_BIN and POSTGRES17_BIN for `make test`), else the newest
// bin/postgres-<major>.*/bin of the repository. Neither is an error naming `make postgres-versions`: a
// test that needs the server fails without it, never skips.
func VersionBinDir(major int) (string, error) {
	env := fmt.Sprintf("POSTGRES%d_BIN", major)
	if d := os.Getenv(env); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("postgrestest: $%s has no initdb (run `make postgres-versions`): %w", env, err)
		}
		return d, nil
	}
	root, err := testutil.FindRepoRoot(".")
	if err != nil {
		return "", err
	}
	matches, _ := filepath.Glob(filepath.Join(root, "bin", fmt.Sprintf("postgres-%d.*", major), "bin", "initdb"))
	sort.Slice(matches, func(i, j int) bool { return releaseOf(matches[i]).newer(releaseOf(matches[j])) })
	if len(matches) == 0 {
		return "", fmt.Errorf("postgrestest: no PostgreSQL %d server: $%s is unset and bin/postgres-%d.* is missing (run `make postgres-versions`, a prerequisite of make test)", major, env, major)
	}
	return filepath.Dir(matches[0]), nil
}

// release is the numbers of a bin/postgres-<version>/bin/initdb path's version, for picking the newest.
type release []int

func releaseOf(initdb string) release {
	v := strings.TrimPrefix(filepath.Base(filepath.Dir(filepath.Dir(initdb))), "postgres-")
	var r release
	for _, f := range strings.FieldsFunc(v, func(c rune) bool { return c < '0' || c > '9' }) {
		n, _ := strconv.Atoi(f)
		r = append(r, n)
	}
	return r
}

func (r release) newer(o release) bool {
	for i := 0; i < len(r) && i < len(o); i++ {
		if r[i] != o[i] {
			return r[i] > o[i]
		}
	}
	return len(r) > len(o)
}

// version is the major version in /usr/lib/postgresql/<version>/bin/initdb, 0 when it is not a number.
func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// Start initialises a data directory and starts a server on it. As root, initdb and postgres (which refuse
// to run as root) run as the system user postgres, which then owns the temporary directory.
func Start(ctx context.Context) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	return StartIn(ctx, bin)
}

// StartVersion is Start with PostgreSQL major's binaries (VersionBinDir), and checks that the server
// really is that version.
func StartVersion(ctx context.Context, major int) (*Server, error) {
	bin, err := VersionBinDir(major)
	if err != nil {
		return nil, err
	}
	s, err := StartIn(ctx, bin)
	if err != nil {
		return nil, err
	}
	conn, err := s.Connect(ctx)
	if err == nil {
		var num int
		err = conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num)
		_ = conn.Close(ctx)
		if err == nil && num/10000 != major {
			err = fmt.Errorf("postgrestest: %s runs server_version_num %d, not PostgreSQL %d", bin, num, major)
		}
	}
	if err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// StartIn is Start with the initdb and postgres of directory bin. A bin whose ../lib holds shared
// libraries (lib*.so.*: the npm builds, which bring their own) runs with that directory on
// LD_LIBRARY_PATH; Debian's lib directory holds only server modules and is left alone.
func StartIn(ctx context.Context, bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "postgrestest-")
	if err != nil {
		return nil, err
	}
	s := &Server{Host: "127.0.0.1", User: Superuser, Password: randomHex(16), dir: dir,
		LogFile: filepath.Join(dir, "server.log"), done: make(chan error, 1)}
	if err := s.start(ctx, bin); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, bin string) error {
	cred, err := credential()
	if err != nil {
		return err
	}
	data := filepath.Join(s.dir, "data")
	pwfile := filepath.Join(s.dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o600); err != nil {
		return err
	}
	if cred != nil {
		for _, p := range []string{s.dir, pwfile} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", s.User,
		"--pwfile="+pwfile, "--auth-host=scram-sha-256", "--auth-local=scram-sha-256", "--no-locale",
		"-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	env := environment(bin)
	initdb.Env = env
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("postgrestest: initdb: %w\n%s", err, out)
	}
	_ = os.Remove(pwfile)

	ports, err := testutil.FreePorts(1)
	if err != nil {
		return err
	}
	s.Port = ports[0]
	logFile, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }() // the child holds its own descriptor
	// Not exec.CommandContext: the server must outlive the start-up context, until Stop.
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(s.Port),
		"-c", "unix_socket_directories=", // TCP only: nothing to clean up outside the temp directory
		"-c", "log_statement=all", "-c", "log_line_prefix=%m [%p] %q%u@%d ",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200")
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.Env = env
	// SIGQUIT (immediate shutdown) when the test process dies without calling Stop.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("postgrestest: start postgres: %w", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	return s.waitReady(ctx)
}

// waitReady polls until the server accepts the superuser, the server exits, or ctx (bounded to a minute) ends.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		conn, err := s.Connect(ctx)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case werr := <-s.done:
			s.done <- werr
			log, _ := os.ReadFile(s.LogFile)
			return fmt.Errorf("postgrestest: postgres exited: %v\n%s", werr, log)
		case <-ctx.Done():
			return fmt.Errorf("postgrestest: server not ready: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop shuts the server down (fast shutdown, then SIGKILL after 30s) and removes its directory. It may be
// called more than once.
func (s *Server) Stop() error {
	var err error
	s.once.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-s.done:
			case <-time.After(30 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.done
			}
		}
		err = os.RemoveAll(s.dir)
	})
	return err
}

// ConnString is a pgx connection string for login and password on database.
func (s *Server) ConnString(login, password, database string) string {
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable connect_timeout=10",
		s.Host, s.Port, quote(login), quote(password), quote(database))
}

// Connect opens a superuser session on the postgres database.
func (s *Server) Connect(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, s.ConnString(s.User, s.Password, "postgres"))
}

// SecretData is what a PostgresConnection's Secret holds for login and password on this server.
func (s *Server) SecretData(login, password string) map[string][]byte {
	return map[string][]byte{
		"host": []byte(s.Host), "port": []byte(strconv.Itoa(s.Port)),
		"user": []byte(login), "password": []byte(password), "sslmode": []byte("disable"),
	}
}

// CreateRole makes a login role with password and the given attributes ("CREATEDB CREATEROLE"), as the
// superuser; for tests of privileges. The statement carries the password in clear: use it only for
// roles whose password the test does not look for in the log.
func (s *Server) CreateRole(ctx context.Context, name, password, attributes string) error {
	conn, err := s.Connect(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	pw := strings.ReplaceAll(password, "'", "''")
	_, err = conn.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN %s PASSWORD '%s'", pgx.Identifier{name}.Sanitize(), attributes, pw))
	return err
}

// LogSize is the log's current length: pass it to Statements to read only what came after.
func (s *Server) LogSize() int64 {
	fi, err := os.Stat(s.LogFile)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// ReadLog is the whole server log.
func (s *Server) ReadLog() (string, error) {
	b, err := os.ReadFile(s.LogFile)
	return string(b), err
}

// statementLine is a log_statement line: "statement: SQL" (simple protocol) or "execute NAME: SQL"
// (extended protocol).
var statementLine = regexp.MustCompile(`LOG:  (?:statement|execute [^:]*): (.*)$`)

// Statement is one logged statement.
type Statement struct {
	// User and Database are the session's, from the log line prefix.
	User, Database string
	// SQL is the statement's first line.
	SQL string
}

// Statements are the statements logged after offset (a LogSize value).
func (s *Server) Statements(offset int64) ([]Statement, error) {
	f, err := os.Open(s.LogFile)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, 0); err != nil {
		return nil, err
	}
	var out []Statement
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := statementLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		st := Statement{SQL: m[1]}
		// Prefix: "2026-01-01 00:00:00.000 UTC [pid] user@db LOG:  ..."
		if i := strings.Index(line, "] "); i >= 0 {
			if ud, _, ok := strings.Cut(line[i+2:], " "); ok {
				st.User, st.Database, _ = strings.Cut(ud, "@")
			}
		}
		out = append(out, st)
	}
	return out, sc.Err()
}

// writing matches statements that change the server: DDL, privileges, comments and data changes.
var writing = regexp.MustCompile(`(?i)^\s*(CREATE|ALTER|DROP|GRANT|REVOKE|COMMENT|INSERT|UPDATE|DELETE|TRUNCATE|SECURITY|REASSIGN)\b`)

// IsWrite says whether a statement changes the server.
func (st Statement) IsWrite() bool { return writing.MatchString(st.SQL) }

// environment is the server's environment: this process's, plus LD_LIBRARY_PATH for a bin whose ../lib
// brings shared libraries; nil (the process's own) otherwise.
func environment(bin string) []string {
	lib := filepath.Join(filepath.Dir(bin), "lib")
	if libs, _ := filepath.Glob(filepath.Join(lib, "lib*.so.*")); len(libs) == 0 {
		return nil
	}
	return append(os.Environ(), "LD_LIBRARY_PATH="+lib)
}

// credential is the postgres system user's, when running as root; nil otherwise.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("postgrestest: running as root needs the system user postgres (the postgresql package makes it): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// quote is a libpq connection string value in single quotes.
func quote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
