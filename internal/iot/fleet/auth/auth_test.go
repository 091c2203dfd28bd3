package auth_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

var dep = fleet.DeploymentKey{Namespace: "shop", Name: "web"}

// client is one user's connection, with the asynchronous errors the server sent it (a permissions
// violation arrives that way, not as a reply).
type client struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	st   *store.Store
	errs chan error
}

func connect(t *testing.T, a *fleettest.Authorized, creds string) *client {
	t.Helper()
	c := &client{errs: make(chan error, 64)}
	nc, err := fleettest.ConnectAs(a.ClientURL(), auth.Client{CredentialsFile: creds},
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case c.errs <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c.nc = nc
	if c.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *client) bind(t *testing.T) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := store.Bind(ctx, c.js)
	if err != nil {
		t.Fatal(err)
	}
	c.st = st
	return c
}

// refused runs op and asserts that the server refused it: a permissions violation (after which op,
// left waiting for a reply that never comes, is cancelled) or an error op returns that says so.
func (c *client) refused(t *testing.T, what string, op func(ctx context.Context) error) {
	t.Helper()
	for len(c.errs) > 0 {
		<-c.errs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- op(ctx) }()
	select {
	case err := <-c.errs:
		cancel()
		<-done
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("%s: the server said %v, want a permissions violation", what, err)
		}
	case err := <-done:
		switch {
		case err == nil:
			t.Errorf("%s: accepted", what)
		case errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(err.Error(), "Permissions Violation"):
		default:
			// The op may end before its violation is handed to the error handler.
			select {
			case perr := <-c.errs:
				if !errors.Is(perr, nats.ErrPermissionViolation) {
					t.Errorf("%s: %v, then %v; want a permissions violation", what, err, perr)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("%s: %v, want a permissions violation", what, err)
			}
		}
	}
}

// allowed runs op (the positive control) and asserts it succeeds.
// receive is the operation of receiving one message on subj as c.
func (c *client) receive(subj string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		sub, err := c.nc.SubscribeSync(subj)
		if err != nil {
			return err
		}
		defer func() { _ = sub.Unsubscribe() }()
		_, err = sub.NextMsgWithContext(ctx)
		return err
	}
}

func allowed(t *testing.T, what string, op func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := op(ctx); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func issue(t *testing.T, a *fleettest.Authorized, r auth.Role, name string) string {
	t.Helper()
	p, err := a.Creds(r, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startWithOperator starts a server configured as fleet-auth init configures it and connects the
// operator's store (which makes the buckets devices bind to); the operator's connection closes and the
// context is cancelled when t ends.
func startWithOperator(t *testing.T) (context.Context, *fleettest.Authorized, *nats.Conn, *store.Store) {
	t.Helper()
	a := fleettest.StartAuthorized(t, nil)
	onc, op, err := a.ConnectOperator(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(onc.Close)
	return t.Context(), a, onc, op
}

// userCreds writes the credentials file of the user uc describes (a new key pair's), signed by signer.
func userCreds(t *testing.T, signer nkeys.KeyPair, uc func(pub string) *jwt.UserClaims) string {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	token, err := uc(pub).Encode(signer)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/user.creds"
	if err := auth.WriteCreds(path, creds); err != nil {
		t.Fatal(err)
	}
	return path
}

func desired(gen int64) fleet.Desired {
	return fleet.Desired{Generation: gen, Score: iotv1.Score{Type: iotv1.ScorePodmanV0, PodmanV0: &iotv1.PodmanV0Score{
		Services: []iotv1.Service{{Name: "app", Image: "registry.example/app:1"}}}}}
}

func TestBucketNamesCarryTheContractVersion(t *testing.T) {
	v := fmt.Sprintf("v%d", fleet.ContractVersion)
	for _, b := range []string{fleet.BucketDevices, fleet.BucketDesired, fleet.BucketState, fleet.BucketHeartbeats} {
		if !strings.HasPrefix(b, "fleet-"+v+"-") {
			t.Errorf("bucket %s does not carry contract %s", b, v)
		}
	}
	r := auth.Requester(auth.RoleViewer, "alice")
	for _, s := range []string{fleet.LogsSubject("d", r), fleet.EventsSubject("d", r), fleet.ReplySubject(r, "d", "n")} {
		if !strings.HasPrefix(s, "fleet."+v+".") {
			t.Errorf("subject %s does not carry contract %s", s, v)
		}
	}
}

// TestDevicesHaveNoResponsePermission: a device publishes only to subjects its template names, never to
// a reply subject a requester chose.
func TestDevicesHaveNoResponsePermission(t *testing.T) {
	if p := auth.Device(); p.Resp != nil {
		t.Errorf("a device holds a response permission: %+v", p.Resp)
	}
}

// TestDevicePermissions is the device role against a server configured with exactly what fleet-auth
// init writes: each hostile operation of device A on device B's records is refused by the server, and
// the same operation on A's own records succeeds.
func TestDevicePermissions(t *testing.T) {
	ctx, a, onc, op := startWithOperator(t)
	for _, dev := range []string{"dev-a", "dev-b"} {
		if _, err := op.Publish(ctx, dev, dep, desired(1)); err != nil {
			t.Fatal(err)
		}
	}
	b := connect(t, a, issue(t, a, auth.RoleDevice, "dev-b")).bind(t)
	allowed(t, "B registers", func(ctx context.Context) error { return b.st.RegisterDevice(ctx, fleet.DeviceInfo{ID: "dev-b"}) })
	allowed(t, "B beats", func(ctx context.Context) error { _, err := b.st.Heartbeat(ctx, "dev-b", 0); return err })
	allowed(t, "B reports", func(ctx context.Context) error {
		_, err := b.st.Report(ctx, dep, "dev-b", 1, fleet.PhaseRunning, "")
		return err
	})

	A := connect(t, a, issue(t, a, auth.RoleDevice, "dev-a")).bind(t)
	state := fleet.Encode(fleet.State{Version: fleet.ContractVersion, Generation: 1, Phase: fleet.PhaseRunning})
	put := func(kv jetstream.KeyValue, key string, v []byte) func(context.Context) error {
		return func(ctx context.Context) error { _, err := kv.Put(ctx, key, v); return err }
	}

	t.Run("state", func(t *testing.T) {
		A.refused(t, "A writes B's state", put(A.st.State, fleet.StateKey(dep, "dev-b"), state))
		A.refused(t, "A reports for B", func(ctx context.Context) error {
			_, err := A.st.Report(ctx, dep, "dev-b", 1, fleet.PhaseFailed, "forged")
			return err
		})
		A.refused(t, "A reads B's state", func(ctx context.Context) error { _, err := A.st.StateOf(ctx, dep, "dev-b"); return err })
		A.refused(t, "A deletes B's state", func(ctx context.Context) error { return A.st.State.Delete(ctx, fleet.StateKey(dep, "dev-b")) })
		A.refused(t, "A purges B's state", func(ctx context.Context) error { return A.st.State.Purge(ctx, fleet.StateKey(dep, "dev-b")) })
		allowed(t, "A reports for itself", func(ctx context.Context) error {
			_, err := A.st.Report(ctx, dep, "dev-a", 1, fleet.PhaseRunning, "")
			return err
		})
		allowed(t, "A reads its state", func(ctx context.Context) error {
			s, err := A.st.StateOf(ctx, dep, "dev-a")
			if err == nil && (s == nil || s.Phase != fleet.PhaseRunning) {
				err = fmt.Errorf("state %+v", s)
			}
			return err
		})
	})

	t.Run("heartbeats and device records", func(t *testing.T) {
		A.refused(t, "A beats for B", put(A.st.Heartbeats, fleet.DeviceKey("dev-b"), []byte(`{"v":2}`)))
		A.refused(t, "A's store beats for B", func(ctx context.Context) error { _, err := A.st.Heartbeat(ctx, "dev-b", 0); return err })
		A.refused(t, "A deletes B's heartbeat", func(ctx context.Context) error { return A.st.Heartbeats.Delete(ctx, "dev-b") })
		A.refused(t, "A writes B's device record", put(A.st.Devices, fleet.DeviceKey("dev-b"), fleet.Encode(fleet.DeviceInfo{Version: fleet.ContractVersion, ID: "dev-b"})))
		A.refused(t, "A registers as B", func(ctx context.Context) error { return A.st.RegisterDevice(ctx, fleet.DeviceInfo{ID: "dev-b"}) })
		A.refused(t, "A tombstones B", func(ctx context.Context) error { return A.st.RemoveDevice(ctx, "dev-b") })
		A.refused(t, "A reads B's device record", func(ctx context.Context) error { _, err := A.st.Devices.Get(ctx, "dev-b"); return err })
		allowed(t, "A beats", func(ctx context.Context) error { _, err := A.st.Heartbeat(ctx, "dev-a", 0); return err })
		allowed(t, "A registers", func(ctx context.Context) error { return A.st.RegisterDevice(ctx, fleet.DeviceInfo{ID: "dev-a"}) })
	})

	t.Run("desired state", func(t *testing.T) {
		A.refused(t, "A reads B's desired state", func(ctx context.Context) error {
			_, err := A.st.Desired.Get(ctx, fleet.DesiredKey("dev-b", dep))
			return err
		})
		A.refused(t, "A watches B's desired state", func(ctx context.Context) error {
			_, err := A.st.WatchDesired(ctx, "dev-b")
			return err
		})
		A.refused(t, "A creates a consumer of its own keys under another name (a KV watch's random one)", func(ctx context.Context) error {
			_, err := A.st.Desired.Watch(ctx, fleet.DesiredDeviceFilter("dev-a"))
			return err
		})
		A.refused(t, "A creates a consumer of its own keys named after B", func(ctx context.Context) error {
			_, err := A.js.CreateConsumer(ctx, "KV_"+fleet.BucketDesired, jetstream.ConsumerConfig{Name: "dev-b",
				FilterSubject: "$KV." + fleet.BucketDesired + ".dev-a.>", AckPolicy: jetstream.AckNonePolicy})
			return err
		})
		A.refused(t, "A deletes B's consumer", func(ctx context.Context) error {
			return A.js.DeleteConsumer(ctx, "KV_"+fleet.BucketDesired, fleet.DesiredConsumer("dev-b"))
		})
		A.refused(t, "A watches every desired state", func(ctx context.Context) error {
			_, err := A.st.Desired.WatchAll(ctx)
			return err
		})
		A.refused(t, "A writes its own desired state", put(A.st.Desired, fleet.DesiredKey("dev-a", dep), fleet.Encode(desired(9))))
		A.refused(t, "A writes B's desired state", put(A.st.Desired, fleet.DesiredKey("dev-b", dep), fleet.Encode(desired(9))))
		A.refused(t, "A deletes its desired state", func(ctx context.Context) error { return A.st.Desired.Delete(ctx, fleet.DesiredKey("dev-a", dep)) })
		A.refused(t, "A purges B's desired state", func(ctx context.Context) error { return A.st.Desired.Purge(ctx, fleet.DesiredKey("dev-b", dep)) })
		allowed(t, "A reads its desired state", func(ctx context.Context) error {
			_, err := A.st.Desired.Get(ctx, fleet.DesiredKey("dev-a", dep))
			return err
		})
		allowed(t, "A watches its desired state through its one consumer", func(ctx context.Context) error {
			w, err := A.st.WatchDesired(ctx, "dev-a")
			if err != nil {
				return err
			}
			defer w.Stop()
			select {
			case e := <-w.Updates():
				if e == nil || e.Key() != fleet.DesiredKey("dev-a", dep) {
					return fmt.Errorf("watch delivered %v", e)
				}
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	})

	t.Run("request bodies cannot widen what the subject allows", func(t *testing.T) {
		desiredStream := "KV_" + fleet.BucketDesired
		own := "$KV." + fleet.BucketDesired + ".dev-a.>"
		// A consumer on A's filter (the subject) configured with B's filter (the body).
		body := fmt.Sprintf(`{"stream_name":%q,"config":{"name":"dev-a","filter_subject":"$KV.%s.dev-b.>","ack_policy":"none","deliver_subject":"_INBOX_dev-a.x1"}}`, desiredStream, fleet.BucketDesired)
		m, err := A.nc.Request("$JS.API.CONSUMER.CREATE."+desiredStream+".dev-a."+own, []byte(body), 10*time.Second)
		if err != nil || !strings.Contains(string(m.Data), `"error"`) {
			t.Errorf("a consumer with B's filter in the body: %v %s, want the server's error", err, msgData(m))
		}
		body = strings.Replace(body, "dev-b.>", "dev-a.>", 1)
		m, err = A.nc.Request("$JS.API.CONSUMER.CREATE."+desiredStream+".dev-a."+own, []byte(body), 10*time.Second)
		if err != nil || strings.Contains(string(m.Data), `"error"`) {
			t.Errorf("control, a consumer with A's filter: %v %s", err, msgData(m))
		}
		_ = A.js.DeleteConsumer(context.Background(), desiredStream, "dev-a")
		// A direct get of A's key whose body asks for another message (B's, sequence 2).
		get := "$JS.API.DIRECT.GET." + desiredStream + ".$KV." + fleet.BucketDesired + "." + fleet.DesiredKey("dev-a", dep)
		m, err = A.nc.Request(get, []byte(`{"seq":2}`), 10*time.Second)
		if err != nil || m.Header.Get("Status") == "" || strings.Contains(string(m.Data), "generation") {
			t.Errorf("a direct get asking for sequence 2: %v %v %s, want the server's refusal", err, msgHeader(m), msgData(m))
		}
		m, err = A.nc.Request(get, nil, 10*time.Second)
		if err != nil || m.Header.Get("Status") != "" || !strings.Contains(string(m.Data), "generation") {
			t.Errorf("control, a direct get of A's key: %v %v %s", err, msgHeader(m), msgData(m))
		}
	})

	// A consumer may name any deliver subject (the server does not check it against the creator's
	// permissions): one delivering A's desired records into B's state key must not write there.
	t.Run("a consumer delivering into B's state key writes nothing there", func(t *testing.T) {
		desiredStream := "KV_" + fleet.BucketDesired
		own := "$KV." + fleet.BucketDesired + ".dev-a.>"
		before := history(t, op, fleet.StateKey(dep, "dev-b"))
		// The control: the same consumer delivering to the operator's inbox does deliver.
		spy, err := onc.SubscribeSync(auth.InboxPrefix(auth.RoleOperator, auth.OperatorUser) + ".spy")
		if err != nil {
			t.Fatal(err)
		}
		// The device's one consumer name, used twice: into B's key, then (the control) to the spy.
		for _, to := range []string{"$KV." + fleet.BucketState + "." + fleet.StateKey(dep, "dev-b"), spy.Subject} {
			name := fleet.DesiredConsumer("dev-a")
			_ = A.js.DeleteConsumer(context.Background(), desiredStream, name)
			body := fmt.Sprintf(`{"stream_name":%q,"config":{"name":%q,"filter_subject":%q,"ack_policy":"none","deliver_subject":%q}}`, desiredStream, name, own, to)
			if m, err := A.nc.Request("$JS.API.CONSUMER.CREATE."+desiredStream+"."+name+"."+own, []byte(body), 10*time.Second); err != nil || strings.Contains(string(m.Data), `"error"`) {
				t.Fatalf("consumer to %s: %v %s", to, err, msgData(m))
			}
			time.Sleep(200 * time.Millisecond) // the push consumer delivers its records
		}
		if _, err := spy.NextMsg(10 * time.Second); err != nil {
			t.Fatalf("the control consumer delivered nothing: %v", err)
		}
		if after := history(t, op, fleet.StateKey(dep, "dev-b")); after != before {
			t.Errorf("B's state history went from %d to %d records", before, after)
		}
	})

	t.Run("roll-ups cannot erase other devices' records", func(t *testing.T) {
		before := history(t, op, fleet.StateKey(dep, "dev-b"))
		for _, key := range []string{"$KV." + fleet.BucketState + "." + fleet.StateKey(dep, "dev-a"), "$KV." + fleet.BucketDevices + ".dev-a"} {
			m := nats.NewMsg(key)
			m.Header.Set("Nats-Rollup", "all")
			m.Data = state
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := A.js.PublishMsg(ctx, m)
			cancel()
			var apiErr *jetstream.APIError
			if !errors.As(err, &apiErr) {
				t.Errorf("a roll-up of every key through %s: %v, want the server's refusal", key, err)
			}
		}
		if after := history(t, op, fleet.StateKey(dep, "dev-b")); after != before || before == 0 {
			t.Errorf("B's state history went from %d to %d records", before, after)
		}
	})

	t.Run("streams", func(t *testing.T) {
		A.refused(t, "A creates a stream", func(ctx context.Context) error {
			_, err := A.js.CreateStream(ctx, jetstream.StreamConfig{Name: "evil", Subjects: []string{"evil.>"}})
			return err
		})
		A.refused(t, "A creates a bucket", func(ctx context.Context) error {
			_, err := A.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "evil"})
			return err
		})
		A.refused(t, "A updates the state bucket", func(ctx context.Context) error {
			_, err := A.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "KV_" + fleet.BucketState, Subjects: []string{"$KV." + fleet.BucketState + ".>"}, MaxMsgsPerSubject: 1})
			return err
		})
		A.refused(t, "A recreates the desired bucket", func(ctx context.Context) error {
			_, err := A.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: fleet.BucketDesired})
			return err
		})
		A.refused(t, "A purges the state bucket", func(ctx context.Context) error {
			_, err := A.nc.RequestWithContext(ctx, "$JS.API.STREAM.PURGE.KV_"+fleet.BucketState, nil)
			return err
		})
		A.refused(t, "A deletes the heartbeat bucket", func(ctx context.Context) error {
			return A.js.DeleteStream(ctx, "KV_"+fleet.BucketHeartbeats)
		})
		allowed(t, "A reads the state bucket's configuration", func(ctx context.Context) error {
			_, err := A.js.Stream(ctx, "KV_"+fleet.BucketState)
			return err
		})
	})

	t.Run("subjects", func(t *testing.T) {
		for _, subj := range []string{fleet.LogsServeSubject("dev-b"), fleet.EventsServeSubject("dev-b"), "fleet.v2.reply.>", "_INBOX_dev-b.>", "_INBOX.>", ">"} {
			A.refused(t, "A subscribes to "+subj, A.receive(subj))
		}
		A.refused(t, "A asks B for its logs", func(ctx context.Context) error {
			if err := A.nc.Publish(fleet.LogsSubject("dev-b", auth.Requester(auth.RoleDevice, "dev-a")), []byte(`{}`)); err != nil {
				return err
			}
			<-ctx.Done() // a refused publish is only reported asynchronously
			return ctx.Err()
		})
	})
}

func msgData(m *nats.Msg) string {
	if m == nil {
		return ""
	}
	return string(m.Data)
}

func msgHeader(m *nats.Msg) nats.Header {
	if m == nil {
		return nil
	}
	return m.Header
}

// history is how many records the state bucket keeps for key, read with the operator's credentials.
func history(t *testing.T, op *store.Store, key string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := op.State.History(ctx, key)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatal(err)
	}
	return len(h)
}
