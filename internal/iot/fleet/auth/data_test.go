package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Secret's data and a fleet-auth directory hold the same authority: Data then FromData gives back
// every key, and a Secret made from the files of Write (with their trailing newlines) reads too.
func TestDataRoundTrip(t *testing.T) {
	a, err := Init()
	if err != nil {
		t.Fatal(err)
	}
	data, err := a.Data()
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 6+len(Roles) {
		t.Fatalf("%d keys, want %d", len(data), 6+len(Roles))
	}
	back, err := FromData(data)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := back.Issue(RoleDevice, "dev-1", 0)
	if err != nil {
		t.Fatalf("the read authority cannot issue: %v", err)
	}
	if _, name, r, err := UserOf(creds); err != nil || name != "dev-1" || r != RoleDevice {
		t.Fatalf("issued %q %q %v", name, r, err)
	}
	if back.AccountJWT != a.AccountJWT || back.OperatorJWT != a.OperatorJWT || back.SystemJWT != a.SystemJWT {
		t.Error("the JWTs changed on the way")
	}

	dir := t.TempDir()
	if err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for name := range data {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	fromFiles, err := FromData(files)
	if err != nil {
		t.Fatalf("a Secret made from fleet-auth's files: %v", err)
	}
	if fromFiles.AccountJWT != a.AccountJWT {
		t.Error("the account JWT read from files differs")
	}

	delete(files, AccountJWTFile)
	if _, err := FromData(files); err == nil || !strings.Contains(err.Error(), AccountJWTFile) {
		t.Errorf("without the account JWT: %v", err)
	}
	files[AccountJWTFile] = []byte(a.AccountJWT)
	files[OperatorSeedFile] = []byte("SOnotaseed")
	if _, err := FromData(files); err == nil {
		t.Error("a bad seed was read")
	}
}
