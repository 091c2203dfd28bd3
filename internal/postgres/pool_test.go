package postgres

import (
	"context"
	"testing"
	"time"
)

func TestKeyOf(t *testing.T) {
	base := Settings{Host: "db", Port: 5432, User: "op", Password: "pw", SSLMode: "disable", Database: "postgres"}
	tests := []struct {
		name string
		edit func(*Settings)
		same bool
	}{
		{"identical", func(*Settings) {}, true},
		{"host", func(s *Settings) { s.Host = "db2" }, false},
		{"port", func(s *Settings) { s.Port = 5433 }, false},
		{"user", func(s *Settings) { s.User = "op2" }, false},
		{"password", func(s *Settings) { s.Password = "pw2" }, false},
		{"sslmode", func(s *Settings) { s.SSLMode = "require" }, false},
		{"database", func(s *Settings) { s.Database = "other" }, false},
		// Length-prefixed fields: moving a character across a boundary is another login.
		{"boundary", func(s *Settings) { s.User, s.Password = "opp", "w" }, false},
	}
	for _, tt := range tests {
		s := base
		tt.edit(&s)
		if got := keyOf(s) == keyOf(base); got != tt.same {
			t.Errorf("%s: same key = %v, want %v", tt.name, got, tt.same)
		}
	}
}

// loginsSince counts the sessions the server authorized since off.
func loginsSince(t *testing.T, off int64) int {
	t.Helper()
	a, _, err := server.Activity(off, "")
	if err != nil {
		t.Fatal(err)
	}
	return a.Logins
}

func acquire(t *testing.T, p *Pool, owner string, s Settings) *Admin {
	t.Helper()
	a, err := p.Acquire(context.Background(), owner, s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestPoolReusesSessions(t *testing.T) {
	ctx := context.Background()
	if err := server.LogConnections(ctx); err != nil {
		t.Fatal(err)
	}
	s := operator(t)
	p := NewPool(2, time.Hour)
	defer p.CloseIdle()

	off := server.LogSize()
	a := acquire(t, p, "c", s)
	if _, err := a.Privileges(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		a := acquire(t, p, "c", s)
		if _, err := a.Privileges(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := loginsSince(t, off); n != 1 {
		t.Errorf("6 sequential sessions logged in %d times, want 1", n)
	}

	// Two at once: a second session; a third waits until one is released (the bound).
	a1, a2 := acquire(t, p, "c", s), acquire(t, p, "c", s)
	waitCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := p.Acquire(waitCtx, "c", s); err == nil {
		t.Error("a third session was handed out beyond the bound of 2")
	}
	_ = a1.Close(ctx)
	_ = a2.Close(ctx)
	if logins, idle := p.Stats(); logins != 1 || idle != 2 {
		t.Errorf("Stats = %d logins, %d idle; want 1, 2", logins, idle)
	}
}

func TestPoolDiscardsBrokenSessions(t *testing.T) {
	ctx := context.Background()
	s := operator(t)
	p := NewPool(2, time.Hour)
	defer p.CloseIdle()

	a := acquire(t, p, "c", s)
	var pid int
	if err := a.conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	_ = a.Close(ctx)
	// The backend is terminated while the session is idle: the next Acquire must not hand it out.
	super, err := server.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = super.Close(ctx) }()
	if _, err := super.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	// Wait for the termination to reach the client's socket (CheckConn sees it readable or closed).
	for i := 0; ; i++ {
		if err := a2check(p, s); err != nil || i > 200 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := acquire(t, p, "c", s)
	if _, err := b.Privileges(ctx); err != nil {
		t.Fatalf("a terminated session was handed out: %v", err)
	}
	// A session whose statement failed on the network is closed by pgx and not returned.
	var pid2 int
	if err := b.conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid2); err != nil {
		t.Fatal(err)
	}
	if pid2 == pid {
		t.Fatal("the terminated backend's session was reused")
	}
	if _, err := super.Exec(ctx, "SELECT pg_terminate_backend($1)", pid2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Privileges(ctx); err == nil {
		t.Fatal("a query on a terminated backend succeeded")
	}
	_ = b.Close(ctx)
	if _, idle := p.Stats(); idle != 0 {
		t.Errorf("a failed session went back to the pool (%d idle)", idle)
	}
}

// a2check says whether the pool's idle session for s is still seen as open: nil while it is.
func a2check(p *Pool, s Settings) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.logins[keyOf(s)]
	if l == nil || len(l.idle) == 0 {
		return context.Canceled
	}
	//nolint:staticcheck // the same check Acquire makes.
	return l.idle[len(l.idle)-1].conn.PgConn().CheckConn()
}

func TestPoolClosesRotatedAndIdle(t *testing.T) {
	ctx := context.Background()
	s := operator(t)
	p := NewPool(2, time.Hour)
	defer p.CloseIdle()

	_ = acquire(t, p, "c", s).Close(ctx)
	_ = acquire(t, p, "other", settings(s.User, s.Password, "template1")).Close(ctx)
	if logins, idle := p.Stats(); logins != 2 || idle != 2 {
		t.Fatalf("Stats = %d, %d; want 2, 2", logins, idle)
	}
	// The owner's Secret is rotated: its former login's session is closed at once.
	inUse := acquire(t, p, "c", s)
	rotated := s
	rotated.Password = "rotated"
	if _, err := p.Acquire(ctx, "c", rotated); err == nil {
		t.Fatal("a wrong password logged in")
	}
	if logins, idle := p.Stats(); logins != 2 || idle != 1 {
		t.Errorf("after rotation Stats = %d, %d; want 2 (other, rotated), 1 (other's)", logins, idle)
	}
	// A session of the old login in use when it was rotated is closed on release, not kept.
	_ = inUse.Close(ctx)
	if _, idle := p.Stats(); idle != 1 {
		t.Errorf("the old login's session went back to the pool (%d idle)", idle)
	}
	p.Forget("other")
	if logins, idle := p.Stats(); idle != 0 || logins != 1 {
		t.Errorf("after Forget Stats = %d, %d; want 1, 0", logins, idle)
	}

	// Idle close: a pool with a short idle time closes sessions by itself (sweep called directly: no
	// timed assertion).
	q := NewPool(2, time.Nanosecond)
	_ = acquire(t, q, "", s).Close(ctx)
	q.sweep()
	if logins, idle := q.Stats(); logins != 0 || idle != 0 {
		t.Errorf("after sweep Stats = %d, %d; want 0, 0", logins, idle)
	}
	q.CloseIdle()
}

// A budget bounds a login's sessions: with a budget of 3 (the pool's own size is 2) a third session is
// handed out and a fourth waits; the budget of 1 lets one through and holds the second. Changing an
// owner's budget is a new login: the sessions kept under the former budget are closed.
func TestPoolBudget(t *testing.T) {
	ctx := context.Background()
	s := operator(t)
	p := NewPool(2, time.Hour)
	defer p.CloseIdle()

	// Logins are given 30 s (a loaded machine); a session beyond the budget waits: 200 ms tells.
	within := func(size int) (*Admin, error) { return p.AcquireWithin(ctx, "c", s, size) }
	beyond := func(size int) error {
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		a, err := p.AcquireWithin(c, "c", s, size)
		if err == nil {
			_ = a.Close(ctx)
		}
		return err
	}
	var held []*Admin
	for i := range 3 {
		a, err := within(3)
		if err != nil {
			t.Fatalf("session %d of a budget of 3: %v", i+1, err)
		}
		held = append(held, a)
	}
	if beyond(3) == nil {
		t.Error("a fourth session was handed out beyond the budget of 3")
	}
	for _, a := range held {
		_ = a.Close(ctx)
	}
	if !p.HasWithin(s, 3) || p.Has(s) {
		t.Errorf("HasWithin(3) = %v, Has = %v after a budget of 3; want true, false", p.HasWithin(s, 3), p.Has(s))
	}

	// The owner moves to a budget of 1: the three idle sessions of the budget of 3 are closed.
	a, err := within(1)
	if err != nil {
		t.Fatal(err)
	}
	if p.HasWithin(s, 3) {
		t.Error("the sessions of the former budget are still kept")
	}
	if beyond(1) == nil {
		t.Error("a second session was handed out beyond the budget of 1")
	}
	_ = a.Close(ctx)
	if logins, idle := p.Stats(); logins != 1 || idle != 1 {
		t.Errorf("Stats = %d logins, %d idle; want 1, 1", logins, idle)
	}

	// A budget equal to the pool's size is the same login as none.
	if k, _ := p.key(s, 2); k != keyOf(s) {
		t.Error("a budget equal to the pool's size is another login")
	}
	if k, n := p.key(s, MaxPoolSize+10); n != MaxPoolSize || k != keyWithin(s, MaxPoolSize) {
		t.Errorf("a budget above MaxPoolSize gives %d sessions, want %d", n, MaxPoolSize)
	}
}
