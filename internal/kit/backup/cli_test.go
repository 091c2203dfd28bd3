package backup

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
)

// writeStoreFile writes a store configuration file for cfg whose credentials are files in dir, as a Job
// mounts a Secret, and returns its path.
func writeStoreFile(t *testing.T, cfg objectstore.Config) string {
	t.Helper()
	dir := t.TempDir()
	id, secret := filepath.Join(dir, "AWS_ACCESS_KEY_ID"), filepath.Join(dir, "AWS_SECRET_ACCESS_KEY")
	if err := os.WriteFile(id, []byte(cfg.Credentials.AccessKeyID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte(cfg.Credentials.SecretAccessKey), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := "endpoint: " + cfg.Endpoint + "\nbucket: " + cfg.Bucket + "\nprefix: " + cfg.Prefix + "\nregion: us-east-1\n" +
		"credentials:\n  accessKeyIDFile: " + id + "\n  secretAccessKeyFile: " + secret + "\n"
	path := filepath.Join(dir, "store.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run calls Main as the binary would and returns its exit code, stdout and stderr.
func run(t *testing.T, stdin []byte, args ...string) (int, []byte, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(t.Context(), args, bytes.NewReader(stdin), &out, &errOut)
	return code, out.Bytes(), errOut.String()
}

func TestMainPutGet(t *testing.T) {
	cfg, _ := newBucket(t, server, "cli")
	storeFile := writeStoreFile(t, cfg)
	id := []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", "ErgoNetwork", "--name", "irc", "--id", "b1"}
	data := []byte("*3\r\n$3\r\nset\r\n$16\r\naccount.exists a\r\n$1\r\n1\r\n") // an ircd.db: put counts it

	code, out, stderr := run(t, data, append([]string{"put", "--format", "buntdb", "--tool-version", "ergo 2.19.1"}, id...)...)
	if code != 0 {
		t.Fatalf("put: exit %d: %s", code, stderr)
	}
	var m Manifest
	if err := json.Unmarshal(out, &m); err != nil || m.Size != int64(len(data)) || m.Format != FormatBuntDB || m.ToolVersion != "ergo 2.19.1" {
		t.Fatalf("put printed %s (%v)", out, err)
	}
	code, out, stderr = run(t, nil, append([]string{"get"}, id...)...)
	if code != 0 || !bytes.Equal(out, data) {
		t.Fatalf("get to stdout: exit %d, %q: %s", code, out, stderr)
	}
	file := filepath.Join(t.TempDir(), "ircd.db")
	code, out, stderr = run(t, nil, append([]string{"get", "--file", file}, id...)...)
	if got, _ := os.ReadFile(file); code != 0 || !bytes.Equal(got, data) || !bytes.Contains(out, []byte(m.SHA256)) {
		t.Fatalf("get --file: exit %d, file %q, stdout %s: %s", code, got, out, stderr)
	}
	// put from a file, and a second put of the same id is refused.
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, nil, append([]string{"put", "--format", "buntdb", "--file", src}, id...)...); code != 1 || !strings.Contains(stderr, "already exists") {
		t.Fatalf("second put: exit %d: %s", code, stderr)
	}
}

// TestMainPutCommand: put runs the producer after "--" and commits only when it exits 0; a producer that
// writes data and then fails leaves the artifact incomplete (the control exits 0).
func TestMainPutCommand(t *testing.T) {
	cfg, _ := newBucket(t, server, "cli-command")
	storeFile := writeStoreFile(t, cfg)
	id := func(n string) []string {
		return []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", "PostgresDatabase", "--name", "app", "--id", n}
	}
	put := func(n, script string) (int, string) {
		code, _, stderr := run(t, nil, append(append([]string{"put"}, id(n)...), "--", "sh", "-c", script)...)
		return code, stderr
	}
	if code, stderr := put("failed", "printf 'half a dump'; echo 'pg_dump: error: connection lost' >&2; exit 3"); code != 1 || !strings.Contains(stderr, "exit status 3") || !strings.Contains(stderr, "connection lost") {
		t.Fatalf("put of a failing producer: exit %d: %s", code, stderr)
	}
	if code, _, stderr := run(t, nil, append([]string{"get"}, id("failed")...)...); code != 1 || !strings.Contains(stderr, "not complete") {
		t.Fatalf("get of the failed producer's artifact: exit %d: %s", code, stderr)
	}
	if code, stderr := put("ok", "printf 'a whole dump'"); code != 0 {
		t.Fatalf("control: put: exit %d: %s", code, stderr)
	}
	if code, out, stderr := run(t, nil, append([]string{"get"}, id("ok")...)...); code != 0 || string(out) != "a whole dump" {
		t.Fatalf("control: get: exit %d %q: %s", code, out, stderr)
	}
	// A command only after "--", only with put, never with --file.
	if code, _, _ := run(t, nil, append(append([]string{"put"}, id("x")...), "sh")...); code != 2 {
		t.Errorf("put with a stray argument: exit %d, want 2", code)
	}
	if code, _, _ := run(t, nil, append(append([]string{"get"}, id("ok")...), "--", "cat")...); code != 2 {
		t.Errorf("get with a command: exit %d, want 2", code)
	}
}

// TestMainGetCorruptFile: get --file of a corrupted artifact exits 1 and leaves nothing at the path (the
// control is the same get before the corruption).
func TestMainGetCorruptFile(t *testing.T) {
	cfg, store := newBucket(t, server, "cli-corrupt")
	storeFile := writeStoreFile(t, cfg)
	id := []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", "ErgoNetwork", "--name", "irc", "--id", "b1"}
	if code, _, stderr := run(t, []byte("0123456789"), append([]string{"put", "--format", "pg_dump-custom"}, id...)...); code != 0 {
		t.Fatalf("put: %s", stderr)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "ircd.db")
	if code, _, stderr := run(t, nil, append([]string{"get", "--file", file}, id...)...); code != 0 {
		t.Fatalf("control: get: %s", stderr)
	}
	_ = os.Remove(file)
	key := "team-a/" + Ref{Namespace: "team-a", Kind: "ErgoNetwork", Name: "irc", ID: "b1"}.DataKey()
	if err := store.PutBytes(t.Context(), key, []byte("0123456788"), ""); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, nil, append([]string{"get", "--file", file}, id...)...)
	if code != 1 || !strings.Contains(stderr, "does not match its manifest") {
		t.Fatalf("get of a corrupted artifact: exit %d: %s", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("get of a corrupted artifact left %v in the directory", entries)
	}
}

// TestMainRefusals: usage errors, a store configuration with a wrong secret, and a key outside the
// namespace; none prints a credential.
func TestMainRefusals(t *testing.T) {
	cfg, _ := newBucket(t, server, "cli-refusals")
	good := writeStoreFile(t, cfg)
	wrong := cfg
	wrong.Credentials.SecretAccessKey = "wrong-" + cfg.Credentials.SecretAccessKey
	bad := writeStoreFile(t, wrong)
	idArgs := func(store, ns, id string) []string {
		return []string{"--store-config", store, "--namespace", ns, "--kind", "PostgresDatabase", "--name", "app", "--id", id}
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"control", append([]string{"put"}, idArgs(good, "team-a", "1")...), 0, ""},
		{"no command", nil, 2, "usage"},
		{"unknown command", []string{"restroe"}, 2, `unknown command "restroe"`},
		{"restore without a store", []string{"restore"}, 2, "--store-config is required"},
		{"no store config", []string{"put", "--namespace", "a", "--kind", "K", "--name", "x", "--id", "1"}, 2, "--store-config is required"},
		{"dot-dot id", append([]string{"put"}, idArgs(good, "team-a", "..")...), 2, "backup id"},
		{"escaping namespace", append([]string{"put"}, idArgs(good, "../team-b", "1")...), 2, "namespace"},
		{"encoded id", append([]string{"get"}, idArgs(good, "team-a", "%2e%2e")...), 2, "backup id"},
		{"wrong secret", append([]string{"put"}, idArgs(bad, "team-a", "2")...), 1, "refused the credentials"},
		{"unknown format", append([]string{"put", "--format", "tar"}, idArgs(good, "team-a", "3")...), 1, `format "tar"`},
		{"missing artifact", append([]string{"get"}, idArgs(good, "team-a", "404")...), 1, "not complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := run(t, []byte("data"), tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.want)
			}
			for _, s := range []string{cfg.Credentials.SecretAccessKey, wrong.Credentials.SecretAccessKey} {
				if strings.Contains(stderr, s) || bytes.Contains(out, []byte(s)) {
					t.Fatalf("the output holds a secret: %s", stderr)
				}
			}
		})
	}
}

func TestLoadStoreFile(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("s3cr3t-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_BACKUP_KEY_ID", "AKIATEST")
	tests := []struct {
		name, doc, want string // want: substring of the error; empty: valid
	}{
		{"file and env", `{"endpoint":"https://s3.example.com","bucket":"backups","credentials":{"accessKeyIDEnv":"TEST_BACKUP_KEY_ID","secretAccessKeyFile":"` + secretFile + `"}}`, ""},
		{"yaml with encryption", "endpoint: s3.example.com\nbucket: backups\nencryption:\n  mode: SSE-KMS\n  kmsKeyID: k1\ncredentials:\n  accessKeyIDEnv: TEST_BACKUP_KEY_ID\n  secretAccessKeyFile: " + secretFile + "\n", ""},
		{"inline secret refused", `{"endpoint":"https://s3.example.com","bucket":"backups","credentials":{"accessKeyIDEnv":"TEST_BACKUP_KEY_ID","secretAccessKey":"s3cr3t-value"}}`, "unknown field"},
		{"unset variable", `{"endpoint":"https://s3.example.com","bucket":"backups","credentials":{"accessKeyIDEnv":"TEST_BACKUP_NOPE","secretAccessKeyFile":"` + secretFile + `"}}`, "TEST_BACKUP_NOPE is unset"},
		{"both sources", `{"endpoint":"https://s3.example.com","bucket":"backups","credentials":{"accessKeyIDEnv":"TEST_BACKUP_KEY_ID","accessKeyIDFile":"x","secretAccessKeyFile":"` + secretFile + `"}}`, "both a file and"},
		{"missing file", `{"endpoint":"https://s3.example.com","bucket":"backups","credentials":{"accessKeyIDEnv":"TEST_BACKUP_KEY_ID","secretAccessKeyFile":"/nonexistent"}}`, "no such file"},
		{"invalid store", `{"endpoint":"ftp://s3.example.com","bucket":"B","credentials":{"accessKeyIDEnv":"TEST_BACKUP_KEY_ID","secretAccessKeyFile":"` + secretFile + `"}}`, "neither https nor http"},
		{"missing CA file", `{"endpoint":"https://s3.example.com","bucket":"backups","caBundleFile":"/nonexistent","credentials":{"accessKeyIDEnv":"TEST_BACKUP_KEY_ID","secretAccessKeyFile":"` + secretFile + `"}}`, "CA bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "store")
			if err := os.WriteFile(path, []byte(tt.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadStoreFile(path)
			if tt.want == "" {
				if err != nil || cfg.Credentials.SecretAccessKey != "s3cr3t-value" || cfg.Credentials.AccessKeyID != "AKIATEST" {
					t.Fatalf("LoadStoreFile() = %v, %v", cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadStoreFile() = %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "s3cr3t-value") {
				t.Fatalf("the error holds the secret: %v", err)
			}
		})
	}
}
