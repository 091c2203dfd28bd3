package redis

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Secret keys of a RedisConnection's Secret.
const (
	HostKey     = "host"
	PortKey     = "port"
	UserKey     = "user"
	PasswordKey = "password"
)

// Settings are where a Redis server is and how to log in.
type Settings struct {
	Host string
	Port int
	// User is an ACL user; empty logs in as the default user.
	User string
	// Password is sent with AUTH; empty sends no AUTH.
	Password string
}

// Address is host:port.
func (s Settings) Address() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// KeyError is a Secret that lacks a required key or holds a value that cannot be used. Its message names
// the key, never a value.
type KeyError struct{ Msg string }

func (e *KeyError) Error() string { return e.Msg }

// FromSecret reads Settings from a Secret's data: host and port are required; user and password are
// optional. Surrounding whitespace (a newline from echo) is an error rather than silently trimmed, except
// in the port, which is only a number.
func FromSecret(data map[string][]byte) (Settings, error) {
	var s Settings
	host := string(data[HostKey])
	switch {
	case host == "":
		return s, &KeyError{Msg: fmt.Sprintf("the Secret has no key %q (the server's host name or address)", HostKey)}
	case strings.TrimSpace(host) != host:
		return s, &KeyError{Msg: fmt.Sprintf("key %q has leading or trailing whitespace", HostKey)}
	}
	portText := strings.TrimSpace(string(data[PortKey]))
	if portText == "" {
		return s, &KeyError{Msg: fmt.Sprintf("the Secret has no key %q (the server's port, e.g. 6379)", PortKey)}
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return s, &KeyError{Msg: fmt.Sprintf("key %q is not a port number between 1 and 65535", PortKey)}
	}
	user, password := string(data[UserKey]), string(data[PasswordKey])
	if strings.TrimSpace(user) != user {
		return s, &KeyError{Msg: fmt.Sprintf("key %q has leading or trailing whitespace", UserKey)}
	}
	if strings.TrimRight(password, "\r\n") != password {
		return s, &KeyError{Msg: fmt.Sprintf("key %q ends in a newline (from echo?); store the password alone", PasswordKey)}
	}
	return Settings{Host: host, Port: port, User: user, Password: password}, nil
}
