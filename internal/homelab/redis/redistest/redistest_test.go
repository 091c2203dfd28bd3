package redistest

import (
	"net"
	"testing"
	"time"
)

func TestStartStop(t *testing.T) {
	s, err := Start(Options{Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		s.Stop()
		t.Fatalf("server not listening on %s: %v", s.Addr(), err)
	}
	_ = conn.Close()
	s.Stop()
	if s.cmd.ProcessState == nil {
		t.Error("Stop returned before the server process was reaped")
	}
	if conn, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		_ = conn.Close()
		t.Errorf("something still listens on %s after Stop", s.Addr())
	}
}
