package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// fleetNATS is the NATS the fleet workload runs on: one in-process server, or a three-server
// JetStream cluster of nats-server processes with R3 buckets.
type fleetNATS interface {
	// url is what the operator's --nats-url gets (every server's URL, comma-separated).
	url() string
	operatorCreds() string
	// connectOperator connects with the operator's credentials and opens the buckets.
	connectOperator(ctx context.Context, ttl time.Duration) (*nats.Conn, *store.Store, error)
	// replicas is the buckets' replica count, the operator's --iot-fleet-replicas.
	replicas() int
	// afterOperator runs once the operator is started (logPath is its log).
	afterOperator(ctx context.Context, logPath string, ttl time.Duration) error
	// varz are the messages every server received and sent so far.
	varz() msgCounts
	shutdown()
}

type msgCounts struct{ InMsgs, OutMsgs int64 }

func startFleetNATS(servers int) (fleetNATS, error) {
	switch servers {
	case 1:
		s, err := fleettest.StartAuthorizedServer(nil)
		if err != nil {
			return nil, err
		}
		return single{s}, nil
	case 3:
		c, err := fleettest.StartClusterServers(3)
		if err != nil {
			return nil, err
		}
		return clustered{c}, nil
	}
	return nil, fmt.Errorf("-fleet-servers: %d servers: 1 or 3", servers)
}

// single is the in-process server that enforces the fleet's permissions as shipped.
type single struct{ *fleettest.Authorized }

func (s single) url() string           { return s.ClientURL() }
func (s single) operatorCreds() string { return s.OperatorCreds }
func (s single) connectOperator(ctx context.Context, ttl time.Duration) (*nats.Conn, *store.Store, error) {
	return s.ConnectOperator(ctx, ttl)
}
func (s single) replicas() int                                              { return 1 }
func (s single) afterOperator(context.Context, string, time.Duration) error { return nil }
func (s single) shutdown()                                                  { s.Shutdown() }
func (s single) varz() msgCounts {
	v, err := s.Varz(nil)
	if err != nil {
		return msgCounts{}
	}
	return msgCounts{v.InMsgs, v.OutMsgs}
}

// clustered is three nats-server processes from the configuration the operator generates for its
// StatefulSet (broker.Render), with the fleet's permission model; the buckets are R3.
type clustered struct{ *fleettest.Cluster }

// benchLimits are the buckets' limits on the cluster: the operator's defaults, three replicas.
func benchLimits() store.Limits {
	l := store.DefaultLimits()
	l.Replicas = 3
	return l
}

func (c clustered) url() string           { return c.ClientURLs() }
func (c clustered) operatorCreds() string { return c.OperatorCreds }
func (c clustered) connectOperator(ctx context.Context, ttl time.Duration) (*nats.Conn, *store.Store, error) {
	return c.ConnectOperator(ctx, ttl, benchLimits())
}
func (c clustered) shutdown() { c.Shutdown() }

func (c clustered) replicas() int { return 3 }

// afterOperator waits until the operator has opened the buckets (with --iot-fleet-replicas=3) and every
// bucket has three current replicas, so that the measurement runs on R3 buckets. Opening them again here
// with three replicas changes nothing when the operator did its part.
func (c clustered) afterOperator(ctx context.Context, logPath string, ttl time.Duration) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(logPath)
		if strings.Contains(string(b), "connected to NATS") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator did not connect to NATS in 2m (log: %s)", logPath)
		}
		time.Sleep(200 * time.Millisecond)
	}
	nc, _, err := c.connectOperator(ctx, ttl)
	if err != nil {
		return err
	}
	nc.Close()
	for _, b := range []string{fleet.BucketDevices, fleet.BucketDesired, fleet.BucketState, fleet.BucketHeartbeats} {
		for {
			si, err := c.StreamInfo(ctx, "KV_"+b)
			ok, _ := c.Current(ctx, "KV_"+b)
			if err == nil && si.Config.Replicas == 3 && ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("bucket %s does not have 3 current replicas after 2m: %v", b, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// varz sums every running server's /varz.
func (c clustered) varz() msgCounts {
	var m msgCounts
	cl := http.Client{Timeout: 5 * time.Second}
	for i := range c.Servers() {
		resp, err := cl.Get(c.MonitorURL(i) + "/varz")
		if err != nil {
			continue
		}
		var v struct {
			InMsgs  int64 `json:"in_msgs"`
			OutMsgs int64 `json:"out_msgs"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&v)
		_ = resp.Body.Close()
		m.InMsgs += v.InMsgs
		m.OutMsgs += v.OutMsgs
	}
	return m
}
