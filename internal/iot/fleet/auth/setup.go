package auth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// FleetAccount and SystemAccount are the names of the two accounts Init makes.
const (
	FleetAccount  = "fleet"
	SystemAccount = "SYS"
)

// The files Write puts in an authority's directory. The seeds (*.nk) are secrets; the JWTs and the
// server configuration are public.
const (
	OperatorSeedFile = "operator.nk"
	OperatorJWTFile  = "operator.jwt"
	AccountSeedFile  = "account.nk"
	AccountJWTFile   = "account.jwt"
	SystemSeedFile   = "system.nk"
	SystemJWTFile    = "system.jwt"
	// ServerConfigFile is the nats-server configuration include: operator, resolver and accounts.
	ServerConfigFile = "nats-auth.conf"
)

// SigningKeyFile is the seed of role r's scoped signing key: what issues the role's credentials.
func SigningKeyFile(r Role) string { return "signing-" + string(r) + ".nk" }

// Authority is the fleet's operator and account: what issues credentials and configures nats-server.
// Any key may be nil when loaded from a directory that holds only part of it (an issuer needs only its
// role's signing key and the account's JWT).
type Authority struct {
	Operator, Account, System nkeys.KeyPair
	SigningKeys               map[Role]nkeys.KeyPair
	OperatorJWT, AccountJWT   string
	SystemJWT                 string
}

// Init makes a new operator, a fleet account with JetStream and one scoped signing key per role, and a
// system account.
func Init() (*Authority, error) {
	a := &Authority{SigningKeys: map[Role]nkeys.KeyPair{}}
	var err error
	if a.Operator, err = nkeys.CreateOperator(); err != nil {
		return nil, err
	}
	if a.Account, err = nkeys.CreateAccount(); err != nil {
		return nil, err
	}
	if a.System, err = nkeys.CreateAccount(); err != nil {
		return nil, err
	}
	for _, r := range Roles {
		if a.SigningKeys[r], err = nkeys.CreateAccount(); err != nil {
			return nil, err
		}
	}
	opub, _ := a.Operator.PublicKey()
	spub, _ := a.System.PublicKey()
	oc := jwt.NewOperatorClaims(opub)
	oc.Name = "fleet-operator"
	oc.SystemAccount = spub
	if a.OperatorJWT, err = oc.Encode(a.Operator); err != nil {
		return nil, fmt.Errorf("sign operator: %w", err)
	}
	sc := jwt.NewAccountClaims(spub)
	sc.Name = SystemAccount
	if a.SystemJWT, err = sc.Encode(a.Operator); err != nil {
		return nil, fmt.Errorf("sign system account: %w", err)
	}
	apub, _ := a.Account.PublicKey()
	ac := jwt.NewAccountClaims(apub)
	ac.Name = FleetAccount
	// JetStream on, without limits of its own: the server's limits apply.
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit,
		Streams: jwt.NoLimit, Consumer: jwt.NoLimit, MaxAckPending: jwt.NoLimit, MemoryMaxStreamBytes: jwt.NoLimit,
		DiskMaxStreamBytes: jwt.NoLimit}
	// The account's own default permissions deny everything, so that a user signed by the account's
	// identity key rather than a scoped key (which no one should ever do) gets no access by accident.
	ac.DefaultPermissions.Pub.Deny.Add(">")
	ac.DefaultPermissions.Sub.Deny.Add(">")
	for _, r := range Roles {
		perms, _ := Permissions(r)
		pub, _ := a.SigningKeys[r].PublicKey()
		scope := jwt.NewUserScope()
		scope.Key, scope.Role = pub, string(r)
		scope.Template.Permissions = perms
		ac.SigningKeys.AddScopedSigner(scope)
	}
	if a.AccountJWT, err = ac.Encode(a.Operator); err != nil {
		return nil, fmt.Errorf("sign account: %w", err)
	}
	return a, nil
}

// AccountKey is the fleet account's public key.
func (a *Authority) AccountKey() (string, error) {
	if a.AccountJWT == "" {
		return "", errors.New("the account JWT is missing")
	}
	ac, err := jwt.DecodeAccountClaims(a.AccountJWT)
	if err != nil {
		return "", fmt.Errorf("read the account JWT: %w", err)
	}
	return ac.Subject, nil
}

// ServerConfig is the nats-server configuration include that trusts this operator and preloads its
// accounts in a memory resolver. The including file adds the listeners, TLS and JetStream.
func (a *Authority) ServerConfig() (string, error) {
	trust, err := a.TrustConfig("resolver: MEMORY\n")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# The fleet's NATS authorization, written by fleet-auth (docs/fleet.md). Include it from\n")
	fmt.Fprintf(&b, "# nats-server.conf; rewrite it (fleet-auth revoke) and reload the server to revoke a user.\n")
	b.WriteString(trust)
	return b.String(), nil
}

// TrustConfig is the part of a nats-server configuration that trusts this authority: its operator, the
// system account, resolver (the caller's line or block: a MEMORY resolver for fleet-auth's include, a
// FULL one for a FleetBroker's servers) and the system and fleet accounts preloaded, last.
func (a *Authority) TrustConfig(resolver string) (string, error) {
	oc, err := jwt.DecodeOperatorClaims(a.OperatorJWT)
	if err != nil {
		return "", fmt.Errorf("read the operator JWT: %w", err)
	}
	sc, err := jwt.DecodeAccountClaims(a.SystemJWT)
	if err != nil {
		return "", fmt.Errorf("read the system account JWT: %w", err)
	}
	ac, err := jwt.DecodeAccountClaims(a.AccountJWT)
	if err != nil {
		return "", fmt.Errorf("read the account JWT: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "operator: %s\n", a.OperatorJWT)
	fmt.Fprintf(&b, "system_account: %s\n", oc.SystemAccount)
	b.WriteString(resolver)
	fmt.Fprintf(&b, "resolver_preload {\n")
	fmt.Fprintf(&b, "  # %s\n  %s: %s\n", SystemAccount, sc.Subject, a.SystemJWT)
	fmt.Fprintf(&b, "  # %s\n  %s: %s\n", FleetAccount, ac.Subject, a.AccountJWT)
	fmt.Fprintf(&b, "}\n")
	return b.String(), nil
}

// Issue makes the credentials (a .creds file's content: the user JWT and its nkey seed) of a user of role
// r named name, signed by the role's scoped signing key, so that the user has exactly the role's
// template and nothing of its own. expires is the credentials' lifetime (0: until revoked).
func (a *Authority) Issue(r Role, name string, expires time.Duration) ([]byte, error) {
	return a.IssueWithLabels(r, name, expires, nil)
}

// IssueWithLabels is Issue with credential labels (a device's only): the labels a namespace policy
// matches (docs/fleet.md, "Credential labels"), carried in the user JWT so that the device cannot
// change them.
func (a *Authority) IssueWithLabels(r Role, name string, expires time.Duration, labels map[string]string) ([]byte, error) {
	if err := ValidateName(r, name); err != nil {
		return nil, err
	}
	if len(labels) > 0 && r != RoleDevice {
		return nil, fmt.Errorf("only a device's credentials carry labels, not a %s's", r)
	}
	if err := ValidLabels(labels); err != nil {
		return nil, err
	}
	sk := a.SigningKeys[r]
	if sk == nil {
		return nil, fmt.Errorf("the signing key of role %s is missing (%s)", r, SigningKeyFile(r))
	}
	acct, err := a.AccountKey()
	if err != nil {
		return nil, err
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	upub, _ := user.PublicKey()
	useed, _ := user.Seed()
	token, err := jwt.IssueUserJWT(sk, acct, upub, name, expires, append([]string{roleTag + string(r)}, labelTags(labels)...)...)
	if err != nil {
		return nil, err
	}
	return jwt.FormatUserConfig(token, useed)
}

// UpdatePermissions re-signs the account JWT with this release's role templates (Permissions), keeping
// its signing keys, revocations and everything else: the permissions live in the account JWT, so a
// release that changes a template takes effect for every existing credential once the account is
// re-signed and nats-server reloaded with the rewritten configuration. It needs the operator's key.
func (a *Authority) UpdatePermissions() error {
	if a.Operator == nil {
		return fmt.Errorf("updating the permissions needs the operator's key (%s)", OperatorSeedFile)
	}
	ac, err := jwt.DecodeAccountClaims(a.AccountJWT)
	if err != nil {
		return fmt.Errorf("read the account JWT: %w", err)
	}
	found := map[Role]bool{}
	for key, scope := range ac.SigningKeys {
		us, ok := scope.(*jwt.UserScope)
		if !ok {
			continue
		}
		perms, err := Permissions(Role(us.Role))
		if err != nil {
			return fmt.Errorf("signing key %s: %w", key, err)
		}
		us.Template.Permissions = perms
		found[Role(us.Role)] = true
	}
	for _, r := range Roles {
		if !found[r] {
			return fmt.Errorf("the account JWT has no signing key of role %s", r)
		}
	}
	if a.AccountJWT, err = ac.Encode(a.Operator); err != nil {
		return fmt.Errorf("sign account: %w", err)
	}
	return nil
}

// Revoke revokes every credential issued to the user with public key userKey before now, by re-signing
// the account JWT with the user in its revocation list. Write the authority and reload nats-server
// with the new configuration to take effect.
func (a *Authority) Revoke(userKey string, now time.Time) error {
	if !nkeys.IsValidPublicUserKey(userKey) {
		return fmt.Errorf("%q is not a user's public key", userKey)
	}
	if a.Operator == nil {
		return fmt.Errorf("revoking needs the operator's key (%s)", OperatorSeedFile)
	}
	ac, err := jwt.DecodeAccountClaims(a.AccountJWT)
	if err != nil {
		return fmt.Errorf("read the account JWT: %w", err)
	}
	ac.Revoke(userKey)
	if !now.IsZero() {
		ac.RevokeAt(userKey, now)
	}
	if a.AccountJWT, err = ac.Encode(a.Operator); err != nil {
		return fmt.Errorf("sign account: %w", err)
	}
	return nil
}

// UserOf reads a .creds file's user: its public key, name and role.
func UserOf(creds []byte) (key, name string, r Role, err error) {
	token, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return "", "", "", err
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return "", "", "", fmt.Errorf("read the user JWT: %w", err)
	}
	for _, t := range uc.Tags {
		if v, ok := strings.CutPrefix(t, roleTag); ok {
			r = Role(v)
		}
	}
	return uc.Subject, uc.Name, r, nil
}

// Write writes the authority's keys (0600) and JWTs, and the server configuration include, into dir.
func (a *Authority) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	seed := func(name string, kp nkeys.KeyPair) error {
		if kp == nil {
			return nil
		}
		s, err := kp.Seed()
		if err != nil {
			return err
		}
		return writeFile(filepath.Join(dir, name), append(s, '\n'), 0o600)
	}
	files := []struct {
		name string
		kp   nkeys.KeyPair
	}{{OperatorSeedFile, a.Operator}, {AccountSeedFile, a.Account}, {SystemSeedFile, a.System}}
	for _, r := range Roles {
		files = append(files, struct {
			name string
			kp   nkeys.KeyPair
		}{SigningKeyFile(r), a.SigningKeys[r]})
	}
	for _, f := range files {
		if err := seed(f.name, f.kp); err != nil {
			return err
		}
	}
	for name, token := range map[string]string{OperatorJWTFile: a.OperatorJWT, AccountJWTFile: a.AccountJWT, SystemJWTFile: a.SystemJWT} {
		if token == "" {
			continue
		}
		if err := writeFile(filepath.Join(dir, name), []byte(token+"\n"), 0o644); err != nil {
			return err
		}
	}
	if a.OperatorJWT == "" || a.SystemJWT == "" || a.AccountJWT == "" {
		return nil
	}
	conf, err := a.ServerConfig()
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, ServerConfigFile), []byte(conf), 0o644)
}

// writeFile replaces path with data atomically, with mode perm whatever a previous file had.
func writeFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Chmod(perm); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// WriteCreds writes credentials to path, readable by its owner only.
func WriteCreds(path string, creds []byte) error { return writeFile(path, creds, 0o600) }

// Load reads what dir holds of an authority: missing files leave their part empty, so an issuer's
// directory needs only account.jwt and its role's signing key.
func Load(dir string) (*Authority, error) {
	a := &Authority{SigningKeys: map[Role]nkeys.KeyPair{}}
	readSeed := func(name string) (nkeys.KeyPair, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(b))))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return kp, nil
	}
	readJWT := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return strings.TrimSpace(string(b)), err
	}
	var err error
	if a.Operator, err = readSeed(OperatorSeedFile); err != nil {
		return nil, err
	}
	if a.Account, err = readSeed(AccountSeedFile); err != nil {
		return nil, err
	}
	if a.System, err = readSeed(SystemSeedFile); err != nil {
		return nil, err
	}
	for _, r := range Roles {
		kp, err := readSeed(SigningKeyFile(r))
		if err != nil {
			return nil, err
		}
		if kp != nil {
			a.SigningKeys[r] = kp
		}
	}
	if a.OperatorJWT, err = readJWT(OperatorJWTFile); err != nil {
		return nil, err
	}
	if a.AccountJWT, err = readJWT(AccountJWTFile); err != nil {
		return nil, err
	}
	if a.SystemJWT, err = readJWT(SystemJWTFile); err != nil {
		return nil, err
	}
	if a.AccountJWT == "" {
		return nil, fmt.Errorf("%s has no %s: run fleet-auth init", dir, AccountJWTFile)
	}
	return a, nil
}

// Data is the authority as the keys of a Kubernetes Secret: the file names Write uses (seeds, JWTs;
// no server configuration), so that a Secret made from a fleet-auth directory and one the operator
// made (a FleetBroker's) read the same. A part the authority does not hold is left out.
func (a *Authority) Data() (map[string][]byte, error) {
	data := map[string][]byte{}
	seed := func(name string, kp nkeys.KeyPair) error {
		if kp == nil {
			return nil
		}
		s, err := kp.Seed()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		data[name] = s
		return nil
	}
	if err := errors.Join(seed(OperatorSeedFile, a.Operator), seed(AccountSeedFile, a.Account), seed(SystemSeedFile, a.System)); err != nil {
		return nil, err
	}
	for _, r := range Roles {
		if err := seed(SigningKeyFile(r), a.SigningKeys[r]); err != nil {
			return nil, err
		}
	}
	for name, token := range map[string]string{OperatorJWTFile: a.OperatorJWT, AccountJWTFile: a.AccountJWT, SystemJWTFile: a.SystemJWT} {
		if token != "" {
			data[name] = []byte(token)
		}
	}
	return data, nil
}

// FromData reads an authority from a Secret's data (Data's keys; surrounding whitespace ignored, so a
// Secret made with kubectl create secret generic --from-file from a fleet-auth directory reads too).
// Like Load, it needs the account JWT and leaves missing parts empty.
func FromData(data map[string][]byte) (*Authority, error) {
	a := &Authority{SigningKeys: map[Role]nkeys.KeyPair{}}
	seed := func(name string) (nkeys.KeyPair, error) {
		v, ok := data[name]
		if !ok {
			return nil, nil
		}
		kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(v))))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return kp, nil
	}
	var err error
	if a.Operator, err = seed(OperatorSeedFile); err != nil {
		return nil, err
	}
	if a.Account, err = seed(AccountSeedFile); err != nil {
		return nil, err
	}
	if a.System, err = seed(SystemSeedFile); err != nil {
		return nil, err
	}
	for _, r := range Roles {
		kp, err := seed(SigningKeyFile(r))
		if err != nil {
			return nil, err
		}
		if kp != nil {
			a.SigningKeys[r] = kp
		}
	}
	a.OperatorJWT = strings.TrimSpace(string(data[OperatorJWTFile]))
	a.AccountJWT = strings.TrimSpace(string(data[AccountJWTFile]))
	a.SystemJWT = strings.TrimSpace(string(data[SystemJWTFile]))
	if a.AccountJWT == "" {
		return nil, fmt.Errorf("no %s", AccountJWTFile)
	}
	return a, nil
}
