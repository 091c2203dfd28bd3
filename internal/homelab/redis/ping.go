package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Outcome classifies a PING.
type Outcome int

const (
	// OK is a server that answered PONG.
	OK Outcome = iota
	// Unreachable is a server the operator could not connect to or that did not answer in time.
	Unreachable
	// AuthenticationFailed is a server that refused the user or password, or that wants a password the
	// Secret does not give.
	AuthenticationFailed
	// ServerError is any other error the server answered with.
	ServerError
)

// Timeout bounds one PING, connection included.
const Timeout = 5 * time.Second

// Ping connects with s, sends PING and closes the connection. It answers OK with a nil error, or the
// outcome and the error. Nothing is retried: the caller decides when to ask again.
func Ping(ctx context.Context, s Settings) (Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	c := goredis.NewClient(&goredis.Options{
		Addr:            s.Address(),
		Username:        s.User,
		Password:        s.Password,
		DialTimeout:     Timeout,
		ReadTimeout:     Timeout,
		WriteTimeout:    Timeout,
		MaxRetries:      -1,
		PoolSize:        1,
		Protocol:        2, // RESP2: no HELLO, so servers before Redis 6 answer too
		DisableIdentity: true,
	})
	defer func() { _ = c.Close() }()
	pong, err := c.Ping(ctx).Result()
	if err != nil {
		return Classify(err), err
	}
	if pong != "PONG" {
		return ServerError, fmt.Errorf("PING answered %q, not PONG", pong)
	}
	return OK, nil
}

// Classify tells an unreachable server from a refused login and other server errors.
func Classify(err error) Outcome {
	if err == nil {
		return OK
	}
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	if errors.As(err, &opErr) || errors.As(err, &dnsErr) || errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return Unreachable
	}
	msg := err.Error()
	for _, prefix := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "ERR invalid password", "ERR AUTH",
		"ERR Client sent AUTH, but no password is set"} {
		if strings.HasPrefix(msg, prefix) {
			return AuthenticationFailed
		}
	}
	if strings.Contains(msg, "EOF") || strings.Contains(msg, "connection reset") {
		return Unreachable
	}
	return ServerError
}
