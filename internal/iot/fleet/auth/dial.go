package auth

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Dial is how every fleet process (the operator, an agent, fleetctl) connects to the fleet's NATS
// server at url: authenticated and verified as c says (Options, then User and Password when set), with
// opts after those (the process's name, reconnects, timeouts), and JetStream opened on the connection.
// The error of a refused connection is nats.Connect's, for the caller to word.
func (c Client) Dial(url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	all, err := c.Options()
	if err != nil {
		return nil, nil, err
	}
	if c.User != "" {
		all = append(all, nats.UserInfo(c.User, c.Password))
	}
	nc, err := nats.Connect(url, append(all, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}
