package datastore

import (
	"errors"
	"strings"

	"github.com/tidwall/buntdb"
)

// CountDB opens the buntdb file at path with buntdb, the library ergo uses, exactly as ergo opens its
// datastore, and counts what ergo would find. buntdb truncates a torn tail when it opens a file, so path
// must be a copy (a drill's download), never a live ergo's datastore.
func CountDB(path string) (Counts, error) {
	db, err := buntdb.Open(path)
	if err != nil {
		return Counts{}, err
	}
	defer func() { _ = db.Close() }()
	var c Counts
	err = db.View(func(tx *buntdb.Tx) error {
		if v, err := tx.Get(SchemaVersionKey); err == nil {
			c.Schema = v
		} else if !errors.Is(err, buntdb.ErrNotFound) {
			return err
		}
		// A key whose expiry has passed may still be in the tree until buntdb's sweep: TTL says
		// ErrNotFound for it, as Get would.
		each := func(prefix string, fn func(expiring bool)) error {
			var ierr error
			err := tx.AscendGreaterOrEqual("", prefix, func(key, _ string) bool {
				if !strings.HasPrefix(key, prefix) {
					return false
				}
				ttl, err := tx.TTL(key)
				switch {
				case errors.Is(err, buntdb.ErrNotFound):
				case err != nil:
					ierr = err
					return false
				default:
					fn(ttl >= 0)
				}
				return true
			})
			return errors.Join(err, ierr)
		}
		if err := each(AccountExistsPrefix, func(expiring bool) {
			if expiring {
				c.PendingAccounts++
			} else {
				c.Accounts++
			}
		}); err != nil {
			return err
		}
		return each(ChannelPrefix, func(expiring bool) {
			if !expiring {
				c.Channels++
			}
		})
	})
	return c, err
}
