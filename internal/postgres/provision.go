package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operator/platform-operator/internal/kit/retry"
)

// Condition and event reasons the provisioner returns. The API groups export the same values under their
// own names (ircv1.ReasonSQLFailed, homelabv1.ReasonSQLFailed, ...); provision_test.go holds them equal.
const (
	// ReasonAuthenticationFailed is an admin login the server refused.
	ReasonAuthenticationFailed = string(FailureAuthentication)
	// ReasonUnreachable is a server that could not be reached.
	ReasonUnreachable = string(FailureUnreachable)
	// ReasonInsufficientPrivileges is an admin login without CREATEROLE and CREATEDB (or superuser).
	ReasonInsufficientPrivileges = "InsufficientPrivileges"
	// ReasonSQLFailed is a statement the server refused.
	ReasonSQLFailed = "SQLFailed"
	// ReasonDatabaseClaimed is a role or database name on the server that another object, or no object
	// of the operator's, owns: it is left untouched.
	ReasonDatabaseClaimed = "DatabaseClaimed"
	// ReasonCleanupBlocked is a deleted object whose database cannot be dropped yet.
	ReasonCleanupBlocked = "CleanupBlocked"
	// ReasonCleanupAbandoned is a deleted object let go with its database left on the server.
	ReasonCleanupAbandoned = "CleanupAbandoned"
)

// Provisioner makes, for the objects of one kind, a login role and a database owned by it on a server
// (ownership recorded as the comments OwnerComment writes, so a name the operator did not make for that
// object is refused, never adopted), keeps the role's password, and drops both when the object goes,
// within a bounded cleanup. It talks to the server and to nothing else: the callers read their Secrets,
// hold their finalizers, write their conditions and emit the events it returns. The fields say how its
// kind differs; set them once, before the first use. It is safe for concurrent use.
type Provisioner struct {
	// Kind names the objects served, in messages ("SojuBouncer").
	Kind string
	// ReleaseAnnotation is the annotation that lets a deleted object go without touching the server,
	// named in the message of a blocked cleanup.
	ReleaseAnnotation string
	// Login describes the admin login in messages ("the admin connection's user"); empty names the
	// server alone.
	Login string
	// CheckPrivileges reads the admin login's privileges before making anything: for a login nothing
	// else has checked (a PostgresConnection checks its own).
	CheckPrivileges bool
	// UnreachableRetry is how soon a server that could not be reached is tried again.
	UnreachableRetry time.Duration
	// LoginErrorReason is the reason of a login the server refused for any other cause than
	// authentication or reachability.
	LoginErrorReason string
	// DroppedReason is the reason of the Normal event that reports a dropped database.
	DroppedReason string
	// CleanupTimeout bounds how long a deleted object waits for its database to be dropped;
	// DefaultCleanupTimeout when zero or less.
	CleanupTimeout time.Duration

	// logins remembers, per object uid, a digest of the role's login last seen working: an unchanged
	// database then costs no login check and no password statement.
	logins sync.Map
}

// Request is the database one object asks for.
type Request struct {
	// UID identifies the object across reconciles.
	UID types.UID
	// Admin is the operator's login to the server.
	Admin Settings
	// SessionOwner names who Admin belongs to, for Sessions; "" for none.
	SessionOwner string
	// MaxSessions is the budget of Admin's login in Sessions (a PostgresConnection's spec.maxSessions):
	// how many admin sessions the operator keeps on that server at most; 0 for DefaultPoolSize.
	MaxSessions int
	// Name names the role and the database.
	Name string
	// Owner is the object, recorded as their comment.
	Owner Owner
	// Live is the object's credentials Secret as it is, nil when there is none: its password is kept
	// unless Rotation asks for a new one. A Secret deleted by hand gets a new password, set on the role.
	Live *corev1.Secret
	// Rotation is the object's rotate-password annotation ("" when none).
	Rotation string
}

// Result is what Ensure found: the database ready with Login, or a condition reason, a message and
// when to try again.
type Result struct {
	// Reason is the condition reason of a database that is not ready; "" when it is.
	Reason string
	// Message says what the server holds, or what is wrong.
	Message string
	// RequeueAfter is how soon to try again; zero when ready.
	RequeueAfter time.Duration
	// Updated, when not empty, is the message of a Normal Updated event: the statements that changed
	// something on the server, which may have run before a later one failed.
	Updated string
	// Login is the role's login, password included, when ready.
	Login Settings
	// NewPassword says that Login's password is a new one (none kept, or a rotation asked for).
	NewPassword bool
	// Transport is what the admin session ran over, once one was opened.
	Transport Transport
}

// Ready says whether the database is ready.
func (r Result) Ready() bool { return r.Reason == "" }

// where is a server's address in messages.
func where(s Settings) string { return fmt.Sprintf("%s:%d", s.Host, s.Port) }

// LoginFailure is the condition reason of a failed admin login, and how soon to try again: an
// unreachable server soon, a refused login (which a change of its Secret retries at once) later. It is
// the provisioner's LoginFailureOf.
func (p *Provisioner) LoginFailure(err error) (string, time.Duration) {
	return LoginFailureOf(err, p.UnreachableRetry, p.LoginErrorReason)
}

// LoginFailureOf maps a failed login to its condition reason and how soon to try again:
// ReasonAuthenticationFailed after retry.Refused, ReasonUnreachable after unreachableRetry, otherReason
// (the caller's word for any other refusal) after retry.Refused. Callers that are not a Provisioner (a
// PostgresConnection's login check) map their login errors with it, alike.
func LoginFailureOf(err error, unreachableRetry time.Duration, otherReason string) (string, time.Duration) {
	switch Classify(err) {
	case FailureAuthentication:
		return ReasonAuthenticationFailed, retry.Refused
	case FailureUnreachable:
		return ReasonUnreachable, unreachableRetry
	default:
		return otherReason, retry.Refused
	}
}

// Ensure makes the server hold req's role and database with the role's password: the Secret's, or a new
// one. A role or database of that name the operator did not make for req.Owner is refused
// (ReasonDatabaseClaimed). An error is one to retry with backoff (no password could be made).
func (p *Provisioner) Ensure(ctx context.Context, req Request) (Result, error) {
	password, kept := KeptPassword(req.Live, req.Rotation)
	if !kept {
		var err error
		if password, err = NewPassword(); err != nil {
			return Result{}, err
		}
	}
	login := req.Admin.As(req.Name, password, req.Name)
	setPassword := !kept
	if !setPassword && !p.loginKnown(req.UID, login) {
		// Not seen working since the operator started: one login tells whether the role has it.
		setPassword = CheckLogin(ctx, login) != nil
	}
	at := where(req.Admin)
	fail := func(r Result, reason string, after time.Duration, msg string) (Result, error) {
		r.Reason, r.RequeueAfter, r.Message = reason, after, msg
		return r, nil
	}

	// A password to set gets its verifier (4096 rounds of PBKDF2) before a session of the budget is taken.
	verifier := ""
	if setPassword {
		var err error
		if verifier, err = NewScramVerifier(password); err != nil {
			return Result{}, err
		}
	}
	admin, err := Sessions.AcquireWithin(ctx, req.SessionOwner, req.Admin, req.MaxSessions)
	if err != nil {
		reason, after := p.LoginFailure(err)
		as := ""
		if p.Login != "" {
			as = " as " + p.Login
		}
		return fail(Result{}, reason, after, fmt.Sprintf("cannot log in to %s%s: %v", at, as, err))
	}
	defer func() { _ = admin.Close(ctx) }()
	res := Result{Transport: admin.Transport()}
	if p.CheckPrivileges {
		priv, err := admin.Privileges(ctx)
		if err != nil {
			return fail(res, ReasonSQLFailed, retry.Refused, fmt.Sprintf("on %s: %v", at, err))
		}
		if !priv.Sufficient() {
			return fail(res, ReasonInsufficientPrivileges, retry.Refused,
				fmt.Sprintf("%s on %s lacks %s: it cannot make the %s's role and database", p.Login, at, priv.Missing(), p.Kind))
		}
	}
	done, err := admin.Ensure(ctx, Database{Name: req.Name, Owner: req.Owner, Password: password, SetPassword: setPassword, Verifier: verifier})
	if len(done) > 0 {
		res.Updated = fmt.Sprintf("On %s: %s", at, strings.Join(done, "; "))
	}
	var claimed *ClaimedError
	switch {
	case errors.As(err, &claimed):
		return fail(res, ReasonDatabaseClaimed, retry.Conflict, claimed.Error())
	case err != nil:
		reason, after := ReasonSQLFailed, retry.Refused
		if Classify(err) == FailureUnreachable {
			reason, after = ReasonUnreachable, p.UnreachableRetry
		}
		return fail(res, reason, after, fmt.Sprintf("on %s: %v", at, err))
	}
	p.logins.Store(req.UID, keyOf(login))
	res.Login, res.NewPassword = login, !kept
	res.Message = fmt.Sprintf("database %s owned by role %s on %s", req.Name, req.Name, at)
	return res, nil
}

// loginKnown says whether login is the one last seen working for the object with uid. The digest is the
// session pool's (keyOf): the password is never kept in clear.
func (p *Provisioner) loginKnown(uid types.UID, login Settings) bool {
	v, ok := p.logins.Load(uid)
	return ok && v.(loginKey) == keyOf(login)
}

// Forget drops what is remembered of the object with uid, once it is gone.
func (p *Provisioner) Forget(uid types.UID) { p.logins.Delete(uid) }

// Cleanup is a deleted object's database to drop.
type Cleanup struct {
	// UID identifies the object.
	UID types.UID
	// Admin is the operator's login to the server; nil when it cannot be used, and Unusable says why.
	Admin    *Settings
	Unusable error
	// SessionOwner names who Admin belongs to, for Sessions; "" for none.
	SessionOwner string
	// MaxSessions is Admin's budget of sessions, as Request's.
	MaxSessions int
	// Name and Owner are the role's and database's, as Ensure made them.
	Name  string
	Owner Owner
	// Deleting is how long ago the object was deleted.
	Deleting time.Duration
}

// Event is one event for the caller to emit on the object.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type, Reason, Message string
}

// Cleaned is what Drop did.
type Cleaned struct {
	// Done says the object may go: its database and role are dropped, were not its own and are left,
	// or the cleanup timed out.
	Done bool
	// Event, when its Reason is set, reports what happened on the server.
	Event Event
	// Blocked is the message of the object's cleanup condition (ReasonCleanupBlocked) while not Done.
	Blocked string
	// RequeueAfter is how soon to try again while not Done.
	RequeueAfter time.Duration
}

// Drop drops c's database (closing its sessions) and role when they are c.Owner's; what is not (another
// object's comment, or none) is left on the server with a DatabaseClaimed Warning. A cleanup that cannot
// log in or whose statements fail is retried (CleanupRetry's pace) until the cleanup timeout after the
// deletion: then the database is left with a CleanupAbandoned Warning and the object goes, so neither it
// nor the deletion of its namespace waits forever on a server gone for good.
func (p *Provisioner) Drop(ctx context.Context, c Cleanup) Cleaned {
	dropped, kept, at, err := p.drop(ctx, c)
	if err != nil {
		after, giveUp := p.NextCleanup(c.Deleting)
		timeout := p.timeout()
		if giveUp {
			p.Forget(c.UID)
			return Cleaned{Done: true, Event: Event{Type: corev1.EventTypeWarning, Reason: ReasonCleanupAbandoned, Message: fmt.Sprintf(
				"Gave up dropping database and role %s after %s: %v. They are left on the server; drop them by hand", c.Name, timeout, err)}}
		}
		return Cleaned{RequeueAfter: after, Blocked: fmt.Sprintf(
			"cannot drop database and role %s yet: %v. The operator retries until %s after the deletion, then leaves them on the server; to let the %s go at once without touching the server, annotate it %s=true",
			c.Name, err, timeout, p.Kind, p.ReleaseAnnotation)}
	}
	p.Forget(c.UID)
	out := Cleaned{Done: true}
	switch {
	case len(kept) > 0:
		out.Event = Event{Type: corev1.EventTypeWarning, Reason: ReasonDatabaseClaimed, Message: "Left on the server: " + strings.Join(kept, "; ")}
	case len(dropped) > 0:
		out.Event = Event{Type: corev1.EventTypeNormal, Reason: p.DroppedReason, Message: fmt.Sprintf("On %s: %s", at, strings.Join(dropped, "; "))}
	}
	return out
}

func (p *Provisioner) drop(ctx context.Context, c Cleanup) (dropped, kept []string, at string, err error) {
	if c.Admin == nil {
		if c.Unusable == nil {
			return nil, nil, "", errors.New("no admin connection")
		}
		return nil, nil, "", c.Unusable
	}
	at = where(*c.Admin)
	admin, err := Sessions.AcquireWithin(ctx, c.SessionOwner, *c.Admin, c.MaxSessions)
	if err != nil {
		return nil, nil, at, fmt.Errorf("log in to %s: %w", at, err)
	}
	defer func() { _ = admin.Close(ctx) }()
	dropped, kept, err = admin.Drop(ctx, c.Name, c.Owner)
	return dropped, kept, at, err
}

func (p *Provisioner) timeout() time.Duration {
	if p.CleanupTimeout <= 0 {
		return DefaultCleanupTimeout
	}
	return p.CleanupTimeout
}

// NextCleanup is NextCleanup with the provisioner's timeout and retry.
func (p *Provisioner) NextCleanup(deleting time.Duration) (after time.Duration, giveUp bool) {
	return NextCleanup(deleting, p.timeout(), p.UnreachableRetry)
}

// CleanupRetry is CleanupRetry with the provisioner's retry.
func (p *Provisioner) CleanupRetry(deleting time.Duration) time.Duration {
	return CleanupRetry(deleting, p.UnreachableRetry)
}
