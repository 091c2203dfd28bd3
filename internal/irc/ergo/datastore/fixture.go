package datastore

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/buntdb"
)

// Fixture is an ircd.db for tests, written with ergo's key schema (schema 24) through buntdb itself, so the
// file is byte for byte what buntdb writes for ergo's transactions.
type Fixture struct {
	// Accounts are registered and verified (no expiry), one transaction each, as ergo's REGISTER and
	// VERIFY leave them.
	Accounts []string
	// PendingAccounts are registered with an expiry (waiting for verification, verify-timeout).
	PendingAccounts []string
	// Unregistered are accounts of Accounts later unregistered: their keys deleted and
	// "account.unregistered <name>" set, as ergo's UNREGISTER does.
	Unregistered []string
	// Channels are registered channels ("#name"), their founder the first account.
	Channels []string
	// DroppedChannels are channels of Channels later unregistered (their key deleted).
	DroppedChannels []string
	// PendingTTL is the expiry of PendingAccounts; zero is an hour.
	PendingTTL time.Duration
}

// casefold is ergo's casefolding for the ASCII names tests use.
func casefold(name string) string { return strings.ToLower(name) }

// uuid is ergo's UUID as its keys spell it: 16 random bytes, base64url without padding.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// WriteFixture writes f to a new buntdb file at path and returns the counts ergo would load from it.
func WriteFixture(path string, f Fixture) (Counts, error) {
	db, err := buntdb.Open(path)
	if err != nil {
		return Counts{}, err
	}
	defer func() { _ = db.Close() }()
	ttl := f.PendingTTL
	if ttl == 0 {
		ttl = time.Hour
	}
	// ergo's initdb: the schema version, the cloak secret, the web push keys (metadata table, 0 <uuid>).
	err = db.Update(func(tx *buntdb.Tx) error {
		for k, v := range map[string]string{
			SchemaVersionKey:           strconv.Itoa(SchemaVersion),
			"0 qta40HS1Q0uhF-kQcfte5Q": uuid() + uuid(),
			"0 V9e9BUFp-SxBYKo4u24M6w": `{"publicKey":"` + uuid() + `","privateKey":"` + uuid() + `"}`,
		} {
			if _, _, err := tx.Set(k, v, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Counts{}, err
	}
	register := func(name string, opts *buntdb.SetOptions, verified bool) error {
		cf := casefold(name)
		return db.Update(func(tx *buntdb.Tx) error {
			creds := fmt.Sprintf(`{"Version":1,"PassphraseHash":%q,"Certfps":null}`, base64.StdEncoding.EncodeToString([]byte("$2a$04$"+uuid())))
			for _, kv := range [][2]string{
				{"account.exists " + cf, "1"},
				{"account.name " + cf, name},
				{"account.registered.time " + cf, strconv.FormatInt(time.Now().UnixNano(), 10)},
				{"account.credentials " + cf, creds},
				{"account.settings " + cf, ""},
			} {
				if _, _, err := tx.Set(kv[0], kv[1], opts); err != nil {
					return err
				}
			}
			if verified {
				_, _, err := tx.Set("account.verified "+cf, "1", nil)
				return err
			}
			return nil
		})
	}
	for _, a := range f.Accounts {
		if err := register(a, nil, true); err != nil {
			return Counts{}, err
		}
	}
	for _, a := range f.PendingAccounts {
		if err := register(a, &buntdb.SetOptions{Expires: true, TTL: ttl}, false); err != nil {
			return Counts{}, err
		}
	}
	founder := ""
	if len(f.Accounts) > 0 {
		founder = casefold(f.Accounts[0])
	}
	channelKeys := map[string]string{}
	for _, ch := range f.Channels {
		id := uuid()
		reg, err := json.Marshal(map[string]any{
			"Name": ch, "UUID": id, "RegisteredAt": time.Now().UTC(), "Founder": founder,
			"Topic": "welcome to " + ch, "TopicSetBy": founder, "TopicSetTime": time.Now().UTC(),
			"Modes": []string{"n", "t"}, "AccountToUMode": map[string]string{founder: "q"},
		})
		if err != nil {
			return Counts{}, err
		}
		key := ChannelPrefix + id
		channelKeys[casefold(ch)] = key
		if err := db.Update(func(tx *buntdb.Tx) error { _, _, err := tx.Set(key, string(reg), nil); return err }); err != nil {
			return Counts{}, err
		}
	}
	for _, a := range f.Unregistered {
		cf := casefold(a)
		err := db.Update(func(tx *buntdb.Tx) error {
			for _, k := range []string{"account.exists ", "account.name ", "account.registered.time ", "account.credentials ", "account.settings ", "account.verified "} {
				if _, err := tx.Delete(k + cf); err != nil && err != buntdb.ErrNotFound {
					return err
				}
			}
			_, _, err := tx.Set("account.unregistered "+cf, a, nil)
			return err
		})
		if err != nil {
			return Counts{}, err
		}
	}
	for _, ch := range f.DroppedChannels {
		key, ok := channelKeys[casefold(ch)]
		if !ok {
			return Counts{}, fmt.Errorf("dropped channel %s is not in Channels", ch)
		}
		if err := db.Update(func(tx *buntdb.Tx) error { _, err := tx.Delete(key); return err }); err != nil {
			return Counts{}, err
		}
	}
	dropped := map[string]bool{}
	for _, a := range f.Unregistered {
		dropped[casefold(a)] = true
	}
	want := Counts{PendingAccounts: len(f.PendingAccounts), Channels: len(f.Channels) - len(f.DroppedChannels), Schema: strconv.Itoa(SchemaVersion)}
	for _, a := range f.Accounts {
		if !dropped[casefold(a)] {
			want.Accounts++
		}
	}
	return want, nil
}
