package backup

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

// TestRestoreDatastore is `backup restore --target-file` end to end on versitygw, with the operator binary
// and ergo's datastore (an ircd.db with ergo's keys):
//   - a round trip into an empty directory: the file is the backed-up bytes and buntdb reads the
//     fixture's accounts and channels from it (the control: another network's artifact gives the other
//     network's content);
//   - a target that exists is refused (TargetNotEmpty) and left byte for byte as it was;
//   - bytes flipped in the store: ChecksumMismatch, nothing at the target, no temporary file left;
//   - another datastore posing as this artifact (its checksum right, the facts this one's):
//     ContentMismatch, nothing at the target;
//   - a pg_dump artifact, a relative path, both targets at once: refused.
func TestRestoreDatastore(t *testing.T) {
	cfg, store := newBucket(t, server, "restore-buntdb")
	storeFile := writeStoreFile(t, cfg)
	artifact := func(name, id string) []string {
		return []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", "ErgoNetwork", "--name", name, "--id", id}
	}
	restoreTo := func(target string, args ...string) (int, VerifyResult) {
		t.Helper()
		code, out, stderr := runBin(t, nil, append([]string{"restore", "--target-file", target}, args...)...)
		if strings.Contains(out+stderr, cfg.Credentials.SecretAccessKey) {
			t.Fatalf("restore prints the secret: %s %s", out, stderr)
		}
		return code, parseResult(t, out)
	}
	// dirHolds says what the directory holds: a failed restore leaves no temporary file.
	dirHolds := func(dir string, want ...string) {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s holds %q, want %q", dir, got, want)
		}
	}
	put := func(name, id string, f ergotest.DatastoreFixture) (string, []byte) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "ircd.db")
		if _, err := ergotest.WriteDatastore(path, f); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runBin(t, nil, append([]string{"put", "--format", "buntdb", "--file", path}, artifact(name, id)...)...); code != 0 {
			t.Fatalf("put %s: exit %d: %s", name, code, stderr)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return path, data
	}
	_, chatData := put("chat", "1", ergotest.DatastoreFixture{Accounts: names(12), Unregistered: []string{"user3"},
		PendingAccounts: []string{"newbie"}, Channels: []string{"#ergo", "#chat", "#old"}, DroppedChannels: []string{"#old"}})
	put("side", "1", ergotest.DatastoreFixture{Accounts: []string{"zed"}, Channels: []string{"#side"}})

	// The round trip.
	dir := t.TempDir()
	target := filepath.Join(dir, "ircd.db")
	code, res := restoreTo(target, artifact("chat", "1")...)
	if code != 0 || res.Result != ResultRestored || res.Reason != ReasonRestored || !strings.Contains(res.Message, "matches the facts") {
		t.Fatalf("restore: exit %d %+v", code, res)
	}
	dirHolds(dir, "ircd.db")
	got, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, chatData) {
		t.Fatal("the restored file is not the backed-up datastore")
	}
	counts, err := ergotest.CountDatastore(target)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Accounts != 11 || counts.PendingAccounts != 1 || counts.Channels != 2 {
		t.Fatalf("restored datastore holds %+v", counts)
	}
	// The control: the other network's artifact restores the other network's datastore.
	otherDir := t.TempDir()
	if code, res := restoreTo(filepath.Join(otherDir, "ircd.db"), artifact("side", "1")...); code != 0 {
		t.Fatalf("restore side: exit %d %+v", code, res)
	}
	if other, err := ergotest.CountDatastore(filepath.Join(otherDir, "ircd.db")); err != nil || other.Accounts != 1 || other.Channels != 1 {
		t.Fatalf("the other network's restore holds %+v (%v)", other, err)
	}

	// A target that exists: refused, unchanged.
	code, res = restoreTo(filepath.Join(otherDir, "ircd.db"), artifact("chat", "1")...)
	if code != 1 || res.Reason != ReasonTargetNotEmpty {
		t.Fatalf("restore over a datastore: exit %d %+v", code, res)
	}
	if after, err := ergotest.CountDatastore(filepath.Join(otherDir, "ircd.db")); err != nil || after.Accounts != 1 {
		t.Fatalf("the refused target changed: %+v (%v)", after, err)
	}
	dirHolds(otherDir, "ircd.db")

	// Flipped bytes: nothing at the target.
	flip(t, store, Ref{Namespace: "team-a", Kind: "ErgoNetwork", Name: "chat", ID: "1"})
	corrupt := t.TempDir()
	code, res = restoreTo(filepath.Join(corrupt, "ircd.db"), artifact("chat", "1")...)
	if code != 1 || res.Reason != ReasonChecksumMismatch {
		t.Fatalf("restore of a flipped artifact: exit %d %+v", code, res)
	}
	dirHolds(corrupt)

	// Another datastore posing as this one, with this one's facts: the checksum matches, the content does not.
	put("chat", "2", ergotest.DatastoreFixture{Accounts: names(12), Channels: []string{"#ergo", "#chat"}})
	put("imposter", "1", ergotest.DatastoreFixture{Accounts: names(3), Channels: []string{"#x"}})
	swap(t, store, Ref{Namespace: "team-a", Kind: "ErgoNetwork", Name: "imposter", ID: "1"}, Ref{Namespace: "team-a", Kind: "ErgoNetwork", Name: "chat", ID: "2"})
	posed := t.TempDir()
	code, res = restoreTo(filepath.Join(posed, "ircd.db"), artifact("chat", "2")...)
	if code != 1 || res.Reason != ReasonContentMismatch {
		t.Fatalf("restore of another datastore posing as this one: exit %d %+v", code, res)
	}
	dirHolds(posed)

	// A pg_dump is not a datastore; a relative path; two targets.
	dump := filepath.Join(t.TempDir(), "dump")
	if err := os.WriteFile(dump, []byte("PGDMP not really"), 0o600); err != nil {
		t.Fatal(err)
	}
	pgArtifact := []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", "PostgresDatabase", "--name", "app", "--id", "1"}
	if code, _, stderr := runBin(t, nil, append([]string{"put", "--format", "pg_dump-custom", "--file", dump}, pgArtifact...)...); code != 0 {
		t.Fatalf("put pg_dump-custom: exit %d: %s", code, stderr)
	}
	wrong := t.TempDir()
	if code, res = restoreTo(filepath.Join(wrong, "ircd.db"), pgArtifact...); code != 1 || res.Reason != ReasonWrongFormat {
		t.Fatalf("restore of a pg_dump into a file: exit %d %+v", code, res)
	}
	dirHolds(wrong)
	if code, res = restoreTo("ircd.db", artifact("side", "1")...); code != 2 || res.Reason != ReasonUsage {
		t.Fatalf("restore to a relative path: exit %d %+v", code, res)
	}
	code, out, _ := runBin(t, []string{"TARGET_URL=postgresql://x@127.0.0.1:1/x"},
		append([]string{"restore", "--target-url-env", "TARGET_URL", "--target-file", filepath.Join(wrong, "ircd.db")}, artifact("side", "1")...)...)
	if res := parseResult(t, out); code != 2 || res.Reason != ReasonUsage {
		t.Fatalf("restore with both targets: exit %d %+v", code, res)
	}
	dirHolds(wrong)
}
