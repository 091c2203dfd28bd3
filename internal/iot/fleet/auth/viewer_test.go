package auth_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// eventually retries op until it succeeds or 30 seconds pass (what a device does once it runs, it does
// asynchronously), and fails the test with op's last error.
func eventually(t *testing.T, what string, op func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := op(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-tick.C:
		}
	}
}

// TestViewerPermissions is the viewer role (fleetctl's) against the shipped configuration: it reads the
// devices, state and heartbeat buckets and asks a device for its logs and events; it writes no key, reads
// no desired state and receives no one else's replies. Each refusal comes from the server, beside the
// same read by the viewer of a bucket it may read or the same write by the device that owns the key.
func TestViewerPermissions(t *testing.T) {
	ctx, a, _, op := startWithOperator(t)
	if _, err := op.Publish(ctx, "dev-a", dep, desired(1)); err != nil {
		t.Fatal(err)
	}
	dev, err := a.StartDevice(ctx, "dev-a", map[string]string{"site": "lyon"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Stop()
	dev.Runtime.AppendLog(dep, "hello from dev-a")
	eventually(t, "dev-a runs generation 1", func(ctx context.Context) error {
		s, err := op.StateOf(ctx, dep, "dev-a")
		if err == nil && (s == nil || s.Phase != fleet.PhaseRunning) {
			err = fmt.Errorf("state %+v", s)
		}
		return err
	})
	owner := connect(t, a, issue(t, a, auth.RoleDevice, "dev-a")).bind(t)

	v := connect(t, a, issue(t, a, auth.RoleViewer, "alice"))
	alice := auth.Requester(auth.RoleViewer, "alice")
	kv := map[string]jetstream.KeyValue{}
	for _, b := range []string{fleet.BucketDevices, fleet.BucketState, fleet.BucketHeartbeats} {
		allowed(t, "the viewer opens bucket "+b, func(ctx context.Context) error {
			var err error
			kv[b], err = v.js.KeyValue(ctx, b)
			return err
		})
	}
	if t.Failed() {
		t.FailNow()
	}

	t.Run("reads", func(t *testing.T) {
		allowed(t, "the viewer reads dev-a's device record", func(ctx context.Context) error {
			_, err := kv[fleet.BucketDevices].Get(ctx, fleet.DeviceKey("dev-a"))
			return err
		})
		allowed(t, "the viewer reads dev-a's state", func(ctx context.Context) error {
			_, err := kv[fleet.BucketState].Get(ctx, fleet.StateKey(dep, "dev-a"))
			return err
		})
		allowed(t, "the viewer reads dev-a's heartbeat", func(ctx context.Context) error {
			_, err := kv[fleet.BucketHeartbeats].Get(ctx, fleet.DeviceKey("dev-a"))
			return err
		})
		allowed(t, "the viewer watches every state", func(ctx context.Context) error {
			w, err := kv[fleet.BucketState].WatchAll(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = w.Stop() }()
			select {
			case e := <-w.Updates():
				if e == nil || e.Key() != fleet.StateKey(dep, "dev-a") {
					return fmt.Errorf("watch delivered %v", e)
				}
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		allowed(t, "the viewer asks dev-a for its logs", func(ctx context.Context) error {
			var lines []string
			err := agent.RequestLogs(ctx, v.nc, alice, "dev-a", dep, 0, func(l string) { lines = append(lines, l) })
			if err == nil && fmt.Sprint(lines) != "[hello from dev-a]" {
				err = fmt.Errorf("lines %q", lines)
			}
			return err
		})
		allowed(t, "the viewer asks dev-a for its events", func(ctx context.Context) error {
			r, err := agent.RequestEvents(ctx, v.nc, alice, "dev-a", dep)
			if err == nil && len(r.Events) == 0 {
				err = errors.New("no events")
			}
			return err
		})
	})

	t.Run("writes", func(t *testing.T) {
		state := fleet.Encode(fleet.State{Version: fleet.ContractVersion, Generation: 1, Phase: fleet.PhaseFailed, Message: "forged"})
		for _, w := range []struct {
			bucket, key string
			value       []byte
		}{
			{fleet.BucketState, fleet.StateKey(dep, "dev-a"), state},
			{fleet.BucketHeartbeats, fleet.DeviceKey("dev-a"), []byte(`{"v":2}`)},
			{fleet.BucketDevices, fleet.DeviceKey("dev-a"), fleet.Encode(fleet.DeviceInfo{Version: fleet.ContractVersion, ID: "dev-a"})},
		} {
			v.refused(t, "the viewer writes "+w.bucket+" "+w.key, func(ctx context.Context) error {
				_, err := kv[w.bucket].Put(ctx, w.key, w.value)
				return err
			})
			v.refused(t, "the viewer deletes "+w.bucket+" "+w.key, func(ctx context.Context) error {
				return kv[w.bucket].Delete(ctx, w.key)
			})
		}
		v.refused(t, "the viewer writes a desired state", func(ctx context.Context) error {
			_, err := v.js.Publish(ctx, "$KV."+fleet.BucketDesired+"."+fleet.DesiredKey("dev-a", dep), fleet.Encode(desired(9)))
			return err
		})
		v.refused(t, "the viewer purges the state bucket", func(ctx context.Context) error {
			_, err := v.nc.RequestWithContext(ctx, "$JS.API.STREAM.PURGE.KV_"+fleet.BucketState, nil)
			return err
		})
		v.refused(t, "the viewer creates a bucket", func(ctx context.Context) error {
			_, err := v.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "evil"})
			return err
		})
		// The control: the owner writes the same state key.
		allowed(t, "dev-a reports its own state", func(ctx context.Context) error {
			_, err := owner.st.Report(ctx, dep, "dev-a", 1, fleet.PhaseRunning, "")
			return err
		})
	})

	t.Run("desired state", func(t *testing.T) {
		v.refused(t, "the viewer opens the desired bucket", func(ctx context.Context) error {
			_, err := v.js.KeyValue(ctx, fleet.BucketDesired)
			return err
		})
		v.refused(t, "the viewer gets dev-a's desired state directly", func(ctx context.Context) error {
			_, err := v.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET.KV_"+fleet.BucketDesired+".$KV."+fleet.BucketDesired+"."+fleet.DesiredKey("dev-a", dep), nil)
			return err
		})
		v.refused(t, "the viewer gets dev-a's desired state by stream message", func(ctx context.Context) error {
			body := fmt.Sprintf(`{"last_by_subj":"$KV.%s.%s"}`, fleet.BucketDesired, fleet.DesiredKey("dev-a", dep))
			_, err := v.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+fleet.BucketDesired, []byte(body))
			return err
		})
		v.refused(t, "the viewer watches the desired bucket", func(ctx context.Context) error {
			desiredStream := "KV_" + fleet.BucketDesired
			all := "$KV." + fleet.BucketDesired + ".>"
			body := fmt.Sprintf(`{"stream_name":%q,"config":{"name":"v1","filter_subject":%q,"ack_policy":"none","deliver_subject":"_INBOX.viewer.alice.v1"}}`, desiredStream, all)
			_, err := v.nc.RequestWithContext(ctx, "$JS.API.CONSUMER.CREATE."+desiredStream+".v1."+all, []byte(body))
			return err
		})
		// The control: the same direct get of the state bucket is answered.
		allowed(t, "the viewer gets dev-a's state directly", func(ctx context.Context) error {
			m, err := v.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET.KV_"+fleet.BucketState+".$KV."+fleet.BucketState+"."+fleet.StateKey(dep, "dev-a"), nil)
			if err == nil && m.Header.Get("Status") != "" {
				err = fmt.Errorf("status %s", m.Header.Get("Status"))
			}
			return err
		})
	})

	t.Run("inboxes and subjects", func(t *testing.T) {
		for _, subj := range []string{
			auth.InboxPrefix(auth.RoleOperator, auth.OperatorUser) + ".>",
			auth.InboxPrefix(auth.RoleDevice, "dev-a") + ".>",
			auth.InboxPrefix(auth.RoleViewer, "bob") + ".>",
			"_INBOX.>", fleet.LogsServeSubject("dev-a"), fleet.EventsServeSubject("dev-a"),
			fleet.ReplyPrefix(auth.Requester(auth.RoleViewer, "bob")) + ".>",
			fleet.ReplyPrefix(auth.Requester(auth.RoleOperator, auth.OperatorUser)) + ".>",
			"fleet.v2.reply.>",
		} {
			v.refused(t, "the viewer subscribes to "+subj, v.receive(subj))
		}
		// The control: dev-a's answer arrives on a reply subject of the viewer's own.
		allowed(t, "the viewer receives on its own reply subject", func(ctx context.Context) error {
			sub, err := v.nc.SubscribeSync(fleet.ReplySubject(alice, "dev-a", "n1"))
			if err != nil {
				return err
			}
			defer func() { _ = sub.Unsubscribe() }()
			req := fmt.Sprintf(`{"namespace":%q,"name":%q}`, dep.Namespace, dep.Name)
			if err := v.nc.PublishRequest(fleet.EventsSubject("dev-a", alice), sub.Subject, []byte(req)); err != nil {
				return err
			}
			_, err = sub.NextMsgWithContext(ctx)
			return err
		})
	})
}

// TestScopedSigningKeyCannotWiden: a user JWT signed by the device role's scoped signing key that
// carries permissions of its own (publish and subscribe to everything) is refused by the server, and so
// is one signed by a key the account does not know; the same user without permissions of its own
// connects and gets only the device template (its own heartbeat, not another's).
func TestScopedSigningKeyCannotWiden(t *testing.T) {
	_, a, _, _ := startWithOperator(t)
	acct, err := a.Authority.AccountKey()
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	user := func(signer nkeys.KeyPair, widen bool) string {
		return userCreds(t, signer, func(pub string) *jwt.UserClaims {
			uc := jwt.NewUserClaims(pub)
			uc.SetScoped(true) // no permissions or limits of its own, as auth.Issue makes it
			uc.Name = "dev-w"
			uc.IssuerAccount = acct
			uc.Tags.Add("fleet-role:device")
			if widen {
				uc.Pub.Allow.Add(">")
				uc.Sub.Allow.Add(">")
			}
			return uc
		})
	}
	refusedAtConnect := func(what, creds string) {
		t.Helper()
		nc, err := nats.Connect(a.ClientURL(), nats.UserCredentials(creds), nats.MaxReconnects(0))
		if err == nil {
			nc.Close()
			t.Errorf("%s: connected", what)
			return
		}
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("%s: %v, want an authorization violation", what, err)
		}
	}
	refusedAtConnect("a device user with its own permissions", user(a.Authority.SigningKeys[auth.RoleDevice], true))
	refusedAtConnect("a user signed by a key the account does not know", user(stranger, false))

	scoped := connect(t, a, user(a.Authority.SigningKeys[auth.RoleDevice], false)).bind(t)
	allowed(t, "control: the same user without permissions beats for itself", func(ctx context.Context) error {
		_, err := scoped.st.Heartbeat(ctx, "dev-w", 0)
		return err
	})
	scoped.refused(t, "the same user beats for another device", func(ctx context.Context) error {
		_, err := scoped.st.Heartbeat(ctx, "dev-x", 0)
		return err
	})
	scoped.refused(t, "the same user writes a desired state", func(ctx context.Context) error {
		_, err := scoped.js.Publish(ctx, "$KV."+fleet.BucketDesired+"."+fleet.DesiredKey("dev-w", dep), fleet.Encode(desired(1)))
		return err
	})
}

// TestAccountKeyUsersGetNothing: a user signed by the account's identity key rather than a scoped key
// (which fleet-auth never does) falls back to the account's default permissions, which deny everything.
func TestAccountKeyUsersGetNothing(t *testing.T) {
	a := fleettest.StartAuthorized(t, nil)
	path := userCreds(t, a.Authority.Account, func(pub string) *jwt.UserClaims {
		uc := jwt.NewUserClaims(pub)
		uc.Name = "dev-a"
		return uc
	})
	c := connect(t, a, path)
	c.refused(t, "an account-key user reads the JetStream account", func(ctx context.Context) error {
		_, err := c.js.AccountInfo(ctx)
		return err
	})
	c.refused(t, "an account-key user beats", func(ctx context.Context) error {
		_, err := c.js.Publish(ctx, "$KV."+fleet.BucketHeartbeats+".dev-a", []byte(`{"v":2}`))
		return err
	})
	// The control: the operator's user reads the JetStream account.
	o := connect(t, a, a.OperatorCreds)
	allowed(t, "the operator reads the JetStream account", func(ctx context.Context) error {
		_, err := o.js.AccountInfo(ctx)
		return err
	})
}
