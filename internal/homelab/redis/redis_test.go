package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/platform-operator/platform-operator/internal/homelab/redis/redistest"
)

// open is a server without a password; locked requires one. Both run for the whole package.
var open, locked *redistest.Server

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	if open, err = redistest.Start(redistest.Options{}); err != nil {
		return 1, err
	}
	defer open.Stop()
	if locked, err = redistest.Start(redistest.Options{Password: "s3cret"}); err != nil {
		return 1, err
	}
	defer locked.Stop()
	// An ACL user on the open server, for the user key.
	c := goredis.NewClient(&goredis.Options{Addr: open.Addr(), Protocol: 2})
	defer func() { _ = c.Close() }()
	if err := c.Do(context.Background(), "ACL", "SETUSER", "app", "on", ">apppw", "+ping").Err(); err != nil {
		return 1, err
	}
	return m.Run(), nil
}

func TestFromSecret(t *testing.T) {
	tests := []struct {
		name    string
		data    map[string][]byte
		want    Settings
		wantErr bool
	}{
		{"host and port", map[string][]byte{"host": []byte("redis.db"), "port": []byte("6379")}, Settings{Host: "redis.db", Port: 6379}, false},
		{"every key", map[string][]byte{"host": []byte("10.0.0.1"), "port": []byte(" 6380\n"), "user": []byte("app"), "password": []byte("pw")},
			Settings{Host: "10.0.0.1", Port: 6380, User: "app", Password: "pw"}, false},
		{"no host", map[string][]byte{"port": []byte("6379")}, Settings{}, true},
		{"host with a newline", map[string][]byte{"host": []byte("redis\n"), "port": []byte("6379")}, Settings{}, true},
		{"no port", map[string][]byte{"host": []byte("redis")}, Settings{}, true},
		{"port not a number", map[string][]byte{"host": []byte("redis"), "port": []byte("redis")}, Settings{}, true},
		{"port out of range", map[string][]byte{"host": []byte("redis"), "port": []byte("65536")}, Settings{}, true},
		{"password ending in a newline", map[string][]byte{"host": []byte("redis"), "port": []byte("1"), "password": []byte("pw\n")}, Settings{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromSecret(tt.data)
			var keyErr *KeyError
			if tt.wantErr != (err != nil) || (err != nil && !errors.As(err, &keyErr)) {
				t.Fatalf("err = %v, want a KeyError: %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if err != nil && tt.data["password"] != nil && containsBytes(err.Error(), tt.data["password"]) {
				t.Errorf("the error quotes the password: %v", err)
			}
		})
	}
}

func containsBytes(s string, b []byte) bool {
	return len(bytesTrim(b)) > 0 && strings.Contains(s, bytesTrim(b))
}

func bytesTrim(b []byte) string { return strings.TrimSpace(string(b)) }

func TestPing(t *testing.T) {
	closed, err := redistest.ClosedPort()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		s    Settings
		want Outcome
	}{
		{"no password needed", Settings{Host: open.Host, Port: open.Port}, OK},
		{"the right password", Settings{Host: locked.Host, Port: locked.Port, Password: "s3cret"}, OK},
		{"an ACL user", Settings{Host: open.Host, Port: open.Port, User: "app", Password: "apppw"}, OK},
		{"a wrong password", Settings{Host: locked.Host, Port: locked.Port, Password: "wrong"}, AuthenticationFailed},
		{"no password where one is needed", Settings{Host: locked.Host, Port: locked.Port}, AuthenticationFailed},
		{"an ACL user with a wrong password", Settings{Host: open.Host, Port: open.Port, User: "app", Password: "nope"}, AuthenticationFailed},
		{"nothing listening", Settings{Host: "127.0.0.1", Port: closed}, Unreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Ping(context.Background(), tt.s)
			if got != tt.want {
				t.Errorf("Ping = %v (%v), want %v", got, err, tt.want)
			}
			if (got == OK) != (err == nil) {
				t.Errorf("outcome %v with error %v", got, err)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want Outcome
	}{
		{nil, OK},
		{replyError("WRONGPASS invalid username-password pair or user is disabled."), AuthenticationFailed},
		{replyError("NOAUTH Authentication required."), AuthenticationFailed},
		{context.DeadlineExceeded, Unreachable},
		{fmt.Errorf("dial: %w", &netOpError), Unreachable},
		{replyError("ERR unknown command 'PING'"), ServerError},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

var netOpError = net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}

// replyError is an error reply as a Redis server words it (capitals and all).
type replyError string

func (e replyError) Error() string { return string(e) }
