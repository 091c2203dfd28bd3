package postgres

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

func TestStatements(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{CreateRole("app", "SCRAM-SHA-256$4096:c2FsdA==$a:b"), `CREATE ROLE "app" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD 'SCRAM-SHA-256$4096:c2FsdA==$a:b'`},
		{SetPassword(`we"ird`, "v"), `ALTER ROLE "we""ird" WITH LOGIN PASSWORD 'v'`},
		{GrantRoleToCurrentUser("app"), `GRANT "app" TO CURRENT_USER`},
		{CreateDatabase("app", "app"), `CREATE DATABASE "app" WITH OWNER "app" ALLOW_CONNECTIONS false`},
		{AllowConnections("app"), `ALTER DATABASE "app" WITH ALLOW_CONNECTIONS true`},
		{SetDatabaseOwner("app", "app"), `ALTER DATABASE "app" OWNER TO "app"`},
		{RevokePublic("app"), `REVOKE ALL ON DATABASE "app" FROM PUBLIC`},
		{CommentOnRole("app", "it's"), `COMMENT ON ROLE "app" IS 'it''s'`},
		{CommentOnDatabase("a.b", "x\x00y"), `COMMENT ON DATABASE "a.b" IS 'xy'`},
		{DropDatabase("app"), `DROP DATABASE IF EXISTS "app" WITH (FORCE)`},
		{DropRole("app"), `DROP ROLE IF EXISTS "app"`},
		{CreateDatabase(`x"; DROP DATABASE postgres; --`, "o"), `CREATE DATABASE "x""; DROP DATABASE postgres; --" WITH OWNER "o" ALLOW_CONNECTIONS false`},
		{AllowConnections(`x"; --`), `ALTER DATABASE "x""; --" WITH ALLOW_CONNECTIONS true`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got  %s\nwant %s", tt.got, tt.want)
		}
	}
}

// TestNewDatabaseOrder pins the making of a database: closed first, opened only after PUBLIC's
// privileges are revoked.
func TestNewDatabaseOrder(t *testing.T) {
	got := NewDatabase("app", "owner", "c")
	want := []string{
		`CREATE DATABASE "app" WITH OWNER "owner" ALLOW_CONNECTIONS false`,
		`COMMENT ON DATABASE "app" IS 'c'`,
		`REVOKE ALL ON DATABASE "app" FROM PUBLIC`,
		`ALTER DATABASE "app" WITH ALLOW_CONNECTIONS true`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("NewDatabase =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSummaryHidesVerifier(t *testing.T) {
	q := SetPassword("app", "SCRAM-SHA-256$4096:salt$stored:server")
	if got := summary(q); strings.Contains(got, "SCRAM") || got != `ALTER ROLE "app" WITH LOGIN PASSWORD ...` {
		t.Errorf("summary = %q", got)
	}
	if got := summary(RevokePublic("app")); got != RevokePublic("app") {
		t.Errorf("summary changed a statement without a password: %q", got)
	}
}

func TestOwnerComment(t *testing.T) {
	o := Owner{Kind: "PostgresDatabase", Namespace: "homelab", Name: "test2.v1", UID: "1234-abcd"}
	got, ok := ParseOwner(o.Comment())
	if !ok || got != o {
		t.Fatalf("ParseOwner(%q) = %+v, %v", o.Comment(), got, ok)
	}
	for _, c := range []string{"", "made by hand", "managed by platform-operator for PostgresDatabase nonamespace (uid x)"} {
		if _, ok := ParseOwner(c); ok {
			t.Errorf("ParseOwner(%q) accepted it", c)
		}
	}
	if !o.SameObject(Owner{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: "other"}) {
		t.Error("a new uid of the same object is not the same object")
	}
	if o.SameObject(Owner{Kind: o.Kind, Namespace: "other", Name: o.Name, UID: o.UID}) {
		t.Error("another namespace is the same object")
	}
}

// TestScramVerifier checks the verifier against RFC 7677's test vector: user "user", password "pencil",
// salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations; the server signature of that exchange follows from the
// ServerKey, and the StoredKey is SHA-256 of the ClientKey the RFC's client proof reveals.
func TestScramVerifier(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	v, err := ScramVerifier("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(v, "$")
	if len(parts) != 3 || parts[0] != "SCRAM-SHA-256" || parts[1] != "4096:W22ZaJ0SNY7soEsUEjb6gQ==" {
		t.Fatalf("verifier %q has the wrong form", v)
	}
	keys := strings.Split(parts[2], ":")
	// From RFC 7677: ClientProof = ClientKey XOR ClientSignature, with
	// AuthMessage = client-first-bare + "," + server-first + "," + client-final-without-proof.
	authMessage := "n=user,r=rOprNGfwEbeRWgbNEkqO," +
		"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	serverKey, _ := base64.StdEncoding.DecodeString(keys[1])
	if got := base64.StdEncoding.EncodeToString(hmacSHA256(serverKey, authMessage)); got != "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Errorf("server signature %s, want RFC 7677's", got)
	}
	proof, _ := base64.StdEncoding.DecodeString("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	storedKey, _ := base64.StdEncoding.DecodeString(keys[0])
	signature := hmacSHA256(storedKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ signature[i]
	}
	if sum := sha256.Sum256(clientKey); base64.StdEncoding.EncodeToString(sum[:]) != keys[0] {
		t.Error("StoredKey is not SHA-256 of the ClientKey RFC 7677's proof reveals")
	}

	a, _ := NewScramVerifier("pencil")
	b, _ := NewScramVerifier("pencil")
	if a == b || strings.Contains(a, "pencil") {
		t.Errorf("NewScramVerifier gave %q and %q: want a random salt and no password", a, b)
	}
}

func TestNewPassword(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		p, err := NewPassword()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != PasswordLength || strings.Trim(p, passwordAlphabet) != "" || seen[p] {
			t.Fatalf("NewPassword = %q: want %d letters and digits, never repeated", p, PasswordLength)
		}
		seen[p] = true
	}
}
