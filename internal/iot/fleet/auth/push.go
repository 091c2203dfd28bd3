package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// ClaimsUpdateSubject is where nats-server's FULL account resolver takes an account JWT signed by its
// trusted operator from a user of the system account: every server of a cluster subscribes, saves
// the JWT and applies it at once, closing the connections of users it now revokes (nats-server's
// accClaimsReqSubj). A server takes a pushed JWT whatever its issue time, an older one too: whoever
// pushes must make sure the latest is pushed last.
const ClaimsUpdateSubject = "$SYS.REQ.CLAIMS.UPDATE"

// pushUserName names the system account's user that pushes account updates.
const pushUserName = "fleet-claims-push"

// PushUser is a user of the system account, signed by its key (system.nk), allowed only to publish
// account updates to ClaimsUpdateSubject and to read the answers in its own inbox, for lifetime.
func (a *Authority) PushUser(lifetime time.Duration) (token string, seed []byte, err error) {
	if a.System == nil {
		return "", nil, fmt.Errorf("pushing an account update needs the system account's key (%s)", SystemSeedFile)
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		return "", nil, err
	}
	upub, _ := user.PublicKey()
	seed, _ = user.Seed()
	uc := jwt.NewUserClaims(upub)
	uc.Name = pushUserName
	uc.Pub.Allow.Add(ClaimsUpdateSubject)
	uc.Sub.Allow.Add("_INBOX.>")
	uc.Expires = time.Now().Add(lifetime).Unix()
	if token, err = uc.Encode(a.System); err != nil {
		return "", nil, fmt.Errorf("sign the push user: %w", err)
	}
	return token, seed, nil
}

// claimUpdateResponse is a server's answer on ClaimsUpdateSubject (nats-server's
// ServerAPIClaimUpdateResponse).
type claimUpdateResponse struct {
	Server *struct {
		Name string `json:"name"`
	} `json:"server"`
	Data *struct {
		Account string `json:"account"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"data,omitempty"`
	Error *struct {
		Account     string `json:"account"`
		Code        int    `json:"code"`
		Description string `json:"description"`
	} `json:"error,omitempty"`
}

// PushAccount sends the account JWT accountJWT to the servers nc is connected to (as a PushUser) and
// waits for servers answers or ctx's end (10 s without a deadline), whichever comes first. It returns
// the names of the servers that saved it; an error when any server refused it or none answered.
// Servers that did not answer (one down, say) catch up from the others: a FULL resolver exchanges its
// accounts with the rest of the cluster, keeping the newer of two by issue time.
func PushAccount(ctx context.Context, nc *nats.Conn, accountJWT string, servers int) ([]string, error) {
	if servers < 1 {
		servers = 1
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(ClaimsUpdateSubject, inbox, []byte(accountJWT)); err != nil {
		return nil, err
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		return nil, err
	}
	var (
		saved []string
		errs  []error
	)
	for len(saved)+len(errs) < servers {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			break // ctx ended: whoever answered, answered
		}
		var r claimUpdateResponse
		if err := json.Unmarshal(msg.Data, &r); err != nil {
			errs = append(errs, fmt.Errorf("a server's answer: %w", err))
			continue
		}
		name := "a server"
		if r.Server != nil && r.Server.Name != "" {
			name = r.Server.Name
		}
		switch {
		case r.Error != nil:
			errs = append(errs, fmt.Errorf("%s refused the account update: %s (%d)", name, r.Error.Description, r.Error.Code))
		case r.Data != nil:
			saved = append(saved, name)
		default:
			errs = append(errs, fmt.Errorf("%s answered neither data nor error", name))
		}
	}
	if len(errs) > 0 {
		return saved, errors.Join(errs...)
	}
	if len(saved) == 0 {
		return nil, fmt.Errorf("no server answered the account update on %s (is the broker's resolver FULL?): %w", ClaimsUpdateSubject, ctx.Err())
	}
	return saved, nil
}

// RevokeLater is Revoke, and makes sure the re-signed account JWT's issue time is later than the one
// it replaces (waiting for the next second when they would be equal): where servers choose between
// two account JWTs by their issue times (seconds) - the configuration's preload at a restart, the
// accounts the servers of a cluster exchange - the later revocation wins, never one signed in the
// same second without it. It says whether userKey was not already revoked (false: nothing changed).
func (a *Authority) RevokeLater(ctx context.Context, userKey string) (bool, error) {
	before, err := jwt.DecodeAccountClaims(a.AccountJWT)
	if err != nil {
		return false, fmt.Errorf("read the account JWT: %w", err)
	}
	if _, ok := before.Revocations[userKey]; ok {
		return false, nil
	}
	for {
		// A revocation at the second the JWT is signed covers every credential issued before it.
		if wait := time.Until(time.Unix(before.IssuedAt+1, 0)); wait > 0 {
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(wait):
			}
		}
		prev := a.AccountJWT
		if err := a.Revoke(userKey, time.Now()); err != nil {
			return false, err
		}
		after, err := jwt.DecodeAccountClaims(a.AccountJWT)
		if err != nil {
			return false, err
		}
		if after.IssuedAt > before.IssuedAt {
			return true, nil
		}
		a.AccountJWT = prev // signed within the old JWT's second after all: again
	}
}

// Revoked says whether the account JWT revokes the user with public key userKey.
func (a *Authority) Revoked(userKey string) (bool, error) {
	ac, err := jwt.DecodeAccountClaims(a.AccountJWT)
	if err != nil {
		return false, fmt.Errorf("read the account JWT: %w", err)
	}
	_, ok := ac.Revocations[userKey]
	return ok, nil
}
