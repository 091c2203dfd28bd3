package datastore

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The facts a backup of ergo's datastore records while it uploads (backup.Manifest.Facts), and a drill
// compares a restored copy with.
const (
	// FactAccounts, FactPendingAccounts and FactChannels are the copy's counts of accounts, accounts
	// awaiting verification (their keys expire) and registered channels, as ergo would load it; FactSchema
	// its datastore schema version.
	FactAccounts        = "ergo.accounts"
	FactPendingAccounts = "ergo.pendingAccounts"
	FactChannels        = "ergo.channels"
	FactSchema          = "ergo.schema"
	// FactTornTailBytes is the length of the torn last command of a copy taken while ergo wrote to the
	// file: buntdb drops it on load, so it is not in the counts.
	FactTornTailBytes = "buntdb.tornTailBytes"
)

// Backup is ergo's datastore as the backup program knows it (the kit's backup.Datastore for its buntdb
// format): main.go gives it to the program, so the kit knows no system.
type Backup struct{}

// Facts counts the stream as ergo would load it.
func (Backup) Facts(r io.Reader, modTime time.Time) (map[string]string, error) {
	res, err := Count(r, CountOptions{ModTime: modTime})
	if err != nil {
		return nil, err
	}
	return map[string]string{
		FactAccounts:        strconv.Itoa(res.Accounts),
		FactPendingAccounts: strconv.Itoa(res.PendingAccounts),
		FactChannels:        strconv.Itoa(res.Channels),
		FactSchema:          res.Schema,
		FactTornTailBytes:   strconv.FormatInt(res.TornTail, 10),
	}, nil
}

// HasFacts says whether recorded holds the counts Check compares with.
func (Backup) HasFacts(recorded map[string]string) bool {
	_, ok := recorded[FactAccounts]
	return ok
}

// Check opens the copy with buntdb, as ergo does, and compares its counts with the recorded facts.
func (Backup) Check(path string, recorded map[string]string) (string, error) {
	want, _, err := CountsOf(recorded)
	if err != nil {
		return err.Error(), nil
	}
	got, err := CountDB(path)
	if err != nil {
		return "", fmt.Errorf("buntdb cannot open the datastore: %w", err)
	}
	var diffs []string
	for _, c := range []struct {
		what      string
		got, want int
	}{{"accounts", got.Accounts, want.Accounts}, {"channels", got.Channels, want.Channels}} {
		if c.got != c.want {
			diffs = append(diffs, fmt.Sprintf("%d %s, the facts %d", c.got, c.what, c.want))
		}
	}
	// Registrations awaiting verification expire: a drill may find fewer than the backup, never more.
	if got.PendingAccounts > want.PendingAccounts {
		diffs = append(diffs, fmt.Sprintf("%d accounts awaiting verification, the facts at most %d", got.PendingAccounts, want.PendingAccounts))
	}
	if got.Schema != want.Schema {
		diffs = append(diffs, fmt.Sprintf("schema %q, the facts %q", got.Schema, want.Schema))
	}
	return strings.Join(diffs, "; "), nil
}

// Open opens the copy with buntdb, as ergo does when it starts.
func (Backup) Open(path string) error {
	if _, err := CountDB(path); err != nil {
		return fmt.Errorf("buntdb cannot open the datastore: %w", err)
	}
	return nil
}

// CountsOf reads the counts of the facts; ok is false when they are absent.
func CountsOf(facts map[string]string) (c Counts, ok bool, err error) {
	if _, ok := facts[FactAccounts]; !ok {
		return c, false, nil
	}
	for _, f := range []struct {
		key string
		to  *int
	}{{FactAccounts, &c.Accounts}, {FactPendingAccounts, &c.PendingAccounts}, {FactChannels, &c.Channels}} {
		n, err := strconv.Atoi(facts[f.key])
		if err != nil {
			return c, true, fmt.Errorf("fact %s: %w", f.key, err)
		}
		*f.to = n
	}
	c.Schema = facts[FactSchema]
	return c, true, nil
}
