package s3test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMissingBinaryNamesTheTarget(t *testing.T) {
	t.Setenv("VERSITYGW", filepath.Join(t.TempDir(), "versitygw"))
	if _, err := Start(t.Context()); err == nil || !strings.Contains(err.Error(), "make versitygw") {
		t.Fatalf("Start() with the binary missing = %v, want an error naming make versitygw", err)
	}
}

// TestKillRestart: the server listens on 127.0.0.1 only, Kill stops it at once and Restart serves the
// same directory on the same port.
func TestKillRestart(t *testing.T) {
	s, err := Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }()
	if !strings.HasPrefix(s.Endpoint, "http://127.0.0.1:") {
		t.Fatalf("Endpoint = %s, want 127.0.0.1", s.Endpoint)
	}
	cfg, err := s.CreateBucket(t.Context(), "kept", "")
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(s.Endpoint, "http://")
	s.Kill()
	if c, err := net.Dial("tcp", addr); err == nil {
		_ = c.Close()
		t.Fatal("the server still accepts connections after Kill")
	}
	if err := s.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Root, cfg.Bucket)); err != nil {
		t.Fatalf("the bucket's directory is gone after Restart: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Root); !os.IsNotExist(err) {
		t.Fatalf("Stop left %s: %v", s.Root, err)
	}
}
