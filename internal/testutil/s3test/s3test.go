// Package s3test runs a real S3-compatible server for tests: versitygw (Apache-2.0) over a temporary
// directory, on 127.0.0.1 with a free port and random root credentials, built by `make versitygw` into
// bin/versitygw-<version> (the version hack/tools/versitygw/go.mod pins). One server per test package:
// start it in TestMain and Stop it at the end. The server dies with the process that started it.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// Server is one running versitygw.
type Server struct {
	// Endpoint is the server's URL, http://127.0.0.1:<port>.
	Endpoint string
	// AccessKeyID and SecretAccessKey are the root user's credentials.
	AccessKeyID, SecretAccessKey string
	// Root is the directory whose subdirectories are the buckets; LogFile is the server's output.
	Root, LogFile string

	bin  string
	tls  []string
	dir  string
	port int
	cmd  *exec.Cmd
	done chan error
	once sync.Once
}

// Binary is the path of the pinned versitygw `make versitygw` builds, or an error naming the target when it
// is missing. $VERSITYGW overrides the path.
func Binary() (string, error) {
	if p := os.Getenv("VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$VERSITYGW %s is missing (unset it to use the one `make versitygw` builds): %w", p, err)
		}
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := testutil.FindRepoRoot(wd)
	if err != nil {
		return "", err
	}
	gomod, err := os.ReadFile(filepath.Join(root, "hack", "tools", "versitygw", "go.mod"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/versity/versitygw\s+(v\S+)\s*$`).FindSubmatch(gomod)
	if m == nil {
		return "", errors.New("hack/tools/versitygw/go.mod does not require github.com/versity/versitygw")
	}
	bin := filepath.Join(root, "bin", "versitygw-"+string(m[1]))
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s is missing: run `make versitygw` (a prerequisite of make test): %w", bin, err)
	}
	return bin, nil
}

// Start starts a server on a fresh directory.
func Start(ctx context.Context) (*Server, error) { return start(ctx, "", "") }

// Main is a test package's TestMain: it starts the package's one server into *srv, runs the tests and stops
// it. A missing or failing server fails the package (never a skip: the server is a prerequisite of make
// test), naming pkg.
func Main(m *testing.M, pkg string, srv **Server) {
	var err error
	if *srv, err = Start(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "%s tests need versitygw: %v\n", pkg, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = (*srv).Stop()
	os.Exit(code)
}

// StartTLS is Start serving HTTPS with the certificate and key in certFile and keyFile; the Endpoint is
// https://127.0.0.1:<port>.
func StartTLS(ctx context.Context, certFile, keyFile string) (*Server, error) {
	return start(ctx, certFile, keyFile)
}

func start(ctx context.Context, certFile, keyFile string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "s3test-")
	if err != nil {
		return nil, err
	}
	ports, err := testutil.FreePorts(1)
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, port: ports[0], Root: filepath.Join(dir, "root"),
		LogFile: filepath.Join(dir, "versitygw.log"), AccessKeyID: "s3test" + randomHex(6), SecretAccessKey: randomHex(20)}
	s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(s.port)
	if certFile != "" {
		s.tls = []string{"--cert", certFile, "--key", keyFile}
		s.Endpoint = "https://127.0.0.1:" + strconv.Itoa(s.port)
	}
	if err := os.Mkdir(s.Root, 0o700); err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// start runs the server on s's directory and port and waits until it accepts connections.
func (s *Server) start(ctx context.Context) error {
	logFile, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	// Not exec.CommandContext: the server outlives the start-up context, until Stop. The credentials go in
	// the environment, not the command line other processes can read.
	args := append([]string{"--port", "127.0.0.1:" + strconv.Itoa(s.port), "--quiet"}, s.tls...)
	s.cmd = exec.Command(s.bin, append(args, "posix", s.Root)...)
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKeyID, "ROOT_SECRET_KEY="+s.SecretAccessKey)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("s3test: start versitygw: %w", err)
	}
	s.done = make(chan error, 1)
	go func() { s.done <- s.cmd.Wait() }()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.port), time.Second)
		if err == nil {
			return conn.Close()
		}
		select {
		case werr := <-s.done:
			s.done <- werr
			log, _ := os.ReadFile(s.LogFile)
			return fmt.Errorf("s3test: versitygw exited: %v\n%s", werr, log)
		case <-ctx.Done():
			return fmt.Errorf("s3test: versitygw not ready: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Kill ends the server at once (SIGKILL), as a crashed store, keeping its directory for Restart.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		<-s.done
		s.done <- nil
	}
}

// Restart starts the server again on the same directory and port after Kill.
func (s *Server) Restart(ctx context.Context) error { return s.start(ctx) }

// Stop ends the server and removes its directory. It may be called more than once.
func (s *Server) Stop() error {
	var err error
	s.once.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(10 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.done
			}
		}
		err = os.RemoveAll(s.dir)
	})
	return err
}

// Config is the objectstore configuration of bucket on this server, with the root credentials.
func (s *Server) Config(bucket, prefix string) objectstore.Config {
	return objectstore.Config{Endpoint: s.Endpoint, Bucket: bucket, Prefix: prefix, Region: "us-east-1",
		Credentials: objectstore.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey}}
}

// CreateBucket makes a bucket through the S3 API and returns its configuration with prefix.
func (s *Server) CreateBucket(ctx context.Context, bucket, prefix string) (objectstore.Config, error) {
	cfg := s.Config(bucket, prefix)
	store, err := objectstore.New(cfg)
	if err != nil {
		return cfg, err
	}
	return cfg, store.CreateBucket(ctx)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
