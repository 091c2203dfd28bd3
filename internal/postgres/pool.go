package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
)

// Pool bounds and defaults.
const (
	// DefaultPoolSize is how many sessions one login keeps at most, in use and idle together, when its
	// owner sets no budget (a PostgresConnection's spec.maxSessions): the reconcilers' workers (8 by
	// default) share them, the rest wait for one to be released.
	DefaultPoolSize = 4
	// MaxPoolSize bounds a budget: PostgreSQL's default max_connections is 100.
	MaxPoolSize = 64
	// DefaultPoolIdle is how long a session is kept unused before it is closed.
	DefaultPoolIdle = 2 * time.Minute
)

// Sessions is the operator's pool of admin sessions, shared by every reconciler that logs in to a
// PostgreSQL server as a PostgresConnection's login.
var Sessions = NewPool(DefaultPoolSize, DefaultPoolIdle)

// loginKey is a digest of everything a session depends on: host, port, user, password, database and TLS
// mode, and of the login's budget of sessions (so that a changed budget is a new login, and the sessions
// of the former budget are closed as a rotated Secret's are). The password is never kept in clear as a key.
type loginKey [sha256.Size]byte

func keyOf(s Settings) loginKey { return keyWithin(s, 0) }

// keyWithin is the key of s's sessions with a budget of size (0: the pool's default).
func keyWithin(s Settings, size int) loginKey {
	h := sha256.New()
	for _, v := range []string{s.Host, s.User, s.Password, s.SSLMode, s.Database} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	var p [8]byte
	binary.BigEndian.PutUint64(p[:], uint64(s.Port))
	h.Write(p[:])
	if size > 0 {
		binary.BigEndian.PutUint64(p[:], uint64(size))
		h.Write([]byte("sessions"))
		h.Write(p[:])
	}
	var k loginKey
	copy(k[:], h.Sum(nil))
	return k
}

// Pool keeps admin sessions per login. It is a small pool of its own rather than pgxpool: it is keyed by
// login and closes a login's sessions when the login's owner (a PostgresConnection) moves to other
// settings, it never pings (an unchanged reconcile sends only its catalog reads), and a session that saw
// an error is dropped rather than reset. It is safe for concurrent use.
type Pool struct {
	size int
	idle time.Duration

	mu      sync.Mutex
	logins  map[loginKey]*login
	owners  map[string]loginKey
	sweeper *time.Timer
}

// login is one login's sessions.
type login struct {
	slots chan struct{} // one token per session in use or being opened
	idle  []idleConn    // most recently released last
	gone  bool          // closed: sessions released to it are closed
}

type idleConn struct {
	conn  *pgx.Conn
	since time.Time
}

// NewPool makes a pool keeping at most size sessions per login, each closed after idle unused.
func NewPool(size int, idle time.Duration) *Pool {
	return &Pool{size: max(size, 1), idle: idle, logins: map[loginKey]*login{}, owners: map[string]loginKey{}}
}

// Acquire returns a session logged in with s, reusing an idle one when there is one: the caller runs its
// statements on it and Closes it, which releases it to the pool. owner names who the settings belong to
// ("namespace/name" of a PostgresConnection); when an owner's settings change (its Secret was rotated),
// the sessions of its former settings are closed at once unless another owner still uses them. An empty
// owner tracks nothing. Acquire waits while the login's sessions are all in use.
func (p *Pool) Acquire(ctx context.Context, owner string, s Settings) (*Admin, error) {
	return p.AcquireWithin(ctx, owner, s, 0)
}

// AcquireWithin is Acquire with a budget: the login keeps at most size sessions (0 or less: the pool's
// size; at most MaxPoolSize). Callers that share a login pass the same budget (a PostgresConnection's
// spec.maxSessions); a changed budget closes the sessions kept under the former one.
func (p *Pool) AcquireWithin(ctx context.Context, owner string, s Settings, size int) (*Admin, error) {
	k, size := p.key(s, size)
	p.mu.Lock()
	if owner != "" {
		if old, ok := p.owners[owner]; ok && old != k {
			p.owners[owner] = k
			if !p.ownedLocked(old) {
				p.closeLoginLocked(old)
			}
		}
		p.owners[owner] = k
	}
	p.mu.Unlock()
	l, err := p.slot(ctx, k, size)
	if err != nil {
		return nil, err
	}
	for {
		p.mu.Lock()
		var c *pgx.Conn
		if n := len(l.idle); n > 0 {
			c = l.idle[n-1].conn
			l.idle = l.idle[:n-1]
		}
		p.mu.Unlock()
		if c == nil {
			break
		}
		// A session the server ended while it sat idle (a restart, a terminated backend) shows as
		// readable or closed without a byte being sent.
		//nolint:staticcheck // CheckConn sends nothing; Ping would be one more statement per reconcile.
		if c.IsClosed() || c.PgConn().CheckConn() != nil {
			_ = c.Close(ctx)
			continue
		}
		return &Admin{conn: c, release: p.releaser(l)}, nil
	}
	cfg, err := s.ConnConfig()
	if err == nil {
		var c *pgx.Conn
		c, err = pgx.ConnectConfig(ctx, cfg)
		instruments.AdminLogin(err)
		if err == nil {
			return &Admin{conn: c, release: p.releaser(l)}, nil
		}
	}
	<-l.slots
	return nil, err
}

// slot takes one of k's session slots, waiting while they are all in use. A login closed meanwhile (a
// rotation, an idle sweep) is replaced by a new one, so that a session is never released to a login the
// pool no longer holds.
func (p *Pool) slot(ctx context.Context, k loginKey, size int) (*login, error) {
	for {
		p.mu.Lock()
		l := p.logins[k]
		if l == nil {
			l = &login{slots: make(chan struct{}, size)}
			p.logins[k] = l
		}
		p.mu.Unlock()
		select {
		case l.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		p.mu.Lock()
		gone := l.gone
		p.mu.Unlock()
		if !gone {
			return l, nil
		}
		<-l.slots
	}
}

// key is the key of s's sessions with the budget size asks for, and that budget: the pool's size when
// none, at most MaxPoolSize. The pool's own size is keyed as none, so that a budget equal to the default
// is the same login as no budget.
func (p *Pool) key(s Settings, size int) (loginKey, int) {
	if size <= 0 || size == p.size {
		return keyWithin(s, 0), p.size
	}
	size = min(size, MaxPoolSize)
	return keyWithin(s, size), size
}

func (p *Pool) releaser(l *login) func(context.Context, *pgx.Conn) error {
	return func(ctx context.Context, c *pgx.Conn) error {
		defer func() { <-l.slots }()
		p.mu.Lock()
		// A session that failed (closed by pgx on a network error or a cancelled query) or was left inside
		// a transaction is not handed to the next caller.
		if l.gone || c.IsClosed() || c.PgConn().TxStatus() != 'I' {
			p.mu.Unlock()
			return c.Close(ctx)
		}
		l.idle = append(l.idle, idleConn{conn: c, since: time.Now()})
		if p.sweeper == nil {
			p.sweeper = time.AfterFunc(p.idle, p.sweep)
		}
		p.mu.Unlock()
		return nil
	}
}

// ownedLocked says whether any owner uses k.
func (p *Pool) ownedLocked(k loginKey) bool {
	for _, v := range p.owners {
		if v == k {
			return true
		}
	}
	return false
}

// closeLoginLocked closes k's idle sessions and marks it gone, so that sessions in use are closed when
// released.
func (p *Pool) closeLoginLocked(k loginKey) {
	l := p.logins[k]
	if l == nil {
		return
	}
	delete(p.logins, k)
	l.gone = true
	for _, ic := range l.idle {
		go func(c *pgx.Conn) { _ = c.Close(context.Background()) }(ic.conn)
	}
	l.idle = nil
}

// sweep closes the sessions idle longer than the pool's idle time, and the logins left with none.
func (p *Pool) sweep() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweeper = nil
	cutoff := time.Now().Add(-p.idle)
	var next time.Time
	for k, l := range p.logins {
		keep := l.idle[:0]
		for _, ic := range l.idle {
			if ic.since.After(cutoff) {
				keep = append(keep, ic)
				if next.IsZero() || ic.since.Before(next) {
					next = ic.since
				}
				continue
			}
			go func(c *pgx.Conn) { _ = c.Close(context.Background()) }(ic.conn)
		}
		l.idle = keep
		if len(l.idle) == 0 && len(l.slots) == 0 && !p.ownedLocked(k) {
			delete(p.logins, k)
			l.gone = true
		}
	}
	if !next.IsZero() {
		p.sweeper = time.AfterFunc(time.Until(next.Add(p.idle)), p.sweep)
	}
}

// Forget drops owner's tracking and closes its login's sessions unless another owner uses them: its
// PostgresConnection was deleted.
func (p *Pool) Forget(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k, ok := p.owners[owner]
	if !ok {
		return
	}
	delete(p.owners, owner)
	if !p.ownedLocked(k) {
		p.closeLoginLocked(k)
	}
}

// CloseIdle closes every idle session and forgets every owner; sessions in use are closed when
// released. The pool stays usable. The manager calls it when it stops.
func (p *Pool) CloseIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.logins {
		p.closeLoginLocked(k)
	}
	clear(p.owners)
	if p.sweeper != nil {
		p.sweeper.Stop()
		p.sweeper = nil
	}
}

// Stats counts what the pool holds: logins with sessions, and idle sessions over all logins.
func (p *Pool) Stats() (logins, idle int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.logins {
		idle += len(l.idle)
	}
	return len(p.logins), idle
}

// Has says whether the pool keeps sessions (idle or in use) of the login s describes, with the pool's
// default budget.
func (p *Pool) Has(s Settings) bool { return p.HasWithin(s, 0) }

// HasWithin is Has for the login s describes with a budget of size sessions.
func (p *Pool) HasWithin(s Settings, size int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k, _ := p.key(s, size)
	l := p.logins[k]
	return l != nil && (len(l.idle) > 0 || len(l.slots) > 0)
}
