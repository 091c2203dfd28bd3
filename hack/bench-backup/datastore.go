package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/buntdb"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/datastore"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
)

// datastoreDir is where the bench's datastore Job mounts the claim (the path the Job's command names; the
// volume is a local directory).
const datastoreDir = "/ircd"

// datastore measures an ircd.db of size bytes: write it (o.accounts and o.channels with ergo's keys, then
// history-like rewrites to reach the size), put it as the datastore Job does, verify it (buntdb opens the
// download and counts), and get it back into a file whose bytes are compared with the source.
func (b *bench) datastore(ctx context.Context, size int64) error {
	fmt.Fprintf(os.Stderr, "ircd.db, %s\n", human(size))
	tag := fmt.Sprintf("%dmb", size/1e6)
	claim := filepath.Join(b.dir, "claim-"+tag)
	if err := os.Mkdir(claim, 0o700); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(claim) }()
	file := filepath.Join(claim, "ircd.db")
	fmt.Fprintln(os.Stderr, "  write")
	fileSize, err := writeDatastore(file, size, b.o.accounts, b.o.channels)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}

	name := "net-" + tag
	bk := newBackup(backupv1.SourceErgoNetwork, name)
	in := jobs.DatastoreInput{Store: b.store, AccessKeyIDKey: "accessKeyID", SecretAccessKeyKey: "secretAccessKey",
		ID: bk.Status.ID, ClaimName: name + "-data", DataDir: datastoreDir, DataFile: "ircd.db",
		PodSelector: map[string]string{"app.kubernetes.io/instance": name}, Format: backup.FormatBuntDB, ToolVersion: "ergo bench"}
	cm, err := jobs.StoreConfigMap(bk, jobs.Input{Store: b.store})
	if err != nil {
		return err
	}
	if err := b.add(ctx, cm); err != nil {
		return err
	}
	volumes := map[string]string{jobs.DatastoreVolume: claim}
	job := jobs.DatastoreJob(bk, in)
	put, putProcs, err := b.step(ctx, "put (backup put --format buntdb --file)", job, volumes)
	if err != nil {
		return err
	}
	ref := backup.Ref{Namespace: namespace, Kind: string(backupv1.SourceErgoNetwork), Name: name, ID: bk.Status.ID}
	m, err := b.repo.Manifest(ctx, ref)
	if err != nil {
		return fmt.Errorf("the put's manifest: %w", err)
	}
	if m.Size != fileSize {
		return fmt.Errorf("the artifact holds %d bytes, the file %d", m.Size, fileSize)
	}
	b.record(row{what: "ircd.db", size: fileSize, artifact: m.Size, step: "backup: `backup put --format buntdb --file`", wall: put, procs: putProcs})

	// The drill: no drill Job exists for ErgoNetwork yet (docs/backup.md), so the datastore Job's pod runs
	// the drill's command without a scratch database (a buntdb drill needs none).
	drill := job.DeepCopy()
	drill.Spec.Template.Spec.Containers[0].Command = withoutScratch(jobs.DrillCommand(bk))
	verify, verifyProcs, err := b.step(ctx, "verify (backup verify: download, buntdb open, counts)", drill, volumes)
	if err != nil {
		return err
	}
	b.record(row{what: "ircd.db", size: fileSize, artifact: m.Size, step: "drill: `backup verify` (download, buntdb opens it, counts)", wall: verify, procs: verifyProcs})

	// The get a restore into a new claim would run: the artifact into a file, checked against the
	// manifest, renamed into place.
	out := filepath.Join(b.dir, "restored-"+tag)
	if err := os.Mkdir(out, 0o700); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(out) }()
	get := job.DeepCopy()
	get.Spec.Template.Spec.Containers[0].Command = []string{jobs.OperatorCommand, "backup", "get",
		"--store-config", jobs.StoreConfigDir + "/" + jobs.StoreConfigKey, "--namespace", namespace,
		"--kind", string(backupv1.SourceErgoNetwork), "--name", name, "--id", bk.Status.ID, "--file", filepath.Join(out, "ircd.db")}
	wall, getProcs, err := b.step(ctx, "get (backup get --file)", get, volumes)
	if err != nil {
		return err
	}
	same, err := sameFile(file, filepath.Join(out, "ircd.db"))
	if err != nil {
		return err
	}
	if !same {
		return fmt.Errorf("the file got back differs from the source")
	}
	b.record(row{what: "ircd.db", size: fileSize, artifact: m.Size, step: "restore: `backup get --file` (into a new claim's file)", wall: wall, procs: getProcs})
	return b.repo.Delete(ctx, ref)
}

// withoutScratch is the drill's command without --scratch-url-env and its value.
func withoutScratch(cmd []string) []string {
	i := slices.Index(cmd, "--scratch-url-env")
	if i < 0 {
		return cmd
	}
	return slices.Delete(slices.Clone(cmd), i, i+2)
}

// writeDatastore writes accounts and channels with ergo's keys (datastore.WriteFixture, one transaction
// each as ergo's REGISTER and channel registration make them), then pads the file to size with what an
// always-on ergo appends as its users come and go: each account's "account.lastseen <account>" rewritten,
// a JSON map of the account's clients to the time each was last seen. buntdb's file is append-only: every
// rewrite adds a record and load keeps the last, so the file grows while what ergo (and the drill) holds
// in memory stays the accounts' and channels'. Automatic shrinking is off while padding (buntdb shrinks a
// file past twice its size at the last shrink: a file this size is one between two shrinks).
func writeDatastore(path string, size int64, accounts, channels int) (int64, error) {
	f := datastore.Fixture{}
	for i := range accounts {
		f.Accounts = append(f.Accounts, fmt.Sprintf("user%06d", i))
	}
	for i := range channels {
		f.Channels = append(f.Channels, fmt.Sprintf("#chan%05d", i))
	}
	if _, err := datastore.WriteFixture(path, f); err != nil {
		return 0, err
	}
	db, err := buntdb.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = db.Close() }()
	var cfg buntdb.Config
	if err := db.ReadConfig(&cfg); err != nil {
		return 0, err
	}
	cfg.AutoShrinkDisabled = true
	cfg.SyncPolicy = buntdb.Never
	if err := db.SetConfig(cfg); err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(uint64(size), 33))
	for i := 0; ; i++ {
		st, err := os.Stat(path)
		if err != nil {
			return 0, err
		}
		if st.Size() >= size {
			break
		}
		err = db.Update(func(tx *buntdb.Tx) error {
			for j := range 1000 {
				a := strings.ToLower(f.Accounts[(i*1000+j)%len(f.Accounts)])
				seen := map[string]time.Time{}
				for range 1 + rng.IntN(6) {
					seen[fmt.Sprintf("%016x", rng.Uint64())] = time.Unix(1.7e9+rng.Int64N(1e8), rng.Int64N(1e9)).UTC()
				}
				v, err := json.Marshal(seen)
				if err != nil {
					return err
				}
				if _, _, err := tx.Set("account.lastseen "+a, string(v), nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	if err := db.Close(); err != nil {
		return 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// sameFile compares two files' SHA-256.
func sameFile(a, b string) (bool, error) {
	sum := func(p string) ([]byte, error) {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return nil, err
		}
		return h.Sum(nil), nil
	}
	x, err := sum(a)
	if err != nil {
		return false, err
	}
	y, err := sum(b)
	if err != nil {
		return false, err
	}
	return string(x) == string(y), nil
}
