package datastore

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// ErrInvalid is a stream that is not in buntdb's file format: buntdb refuses to open such a file, and so
// does ergo.
var ErrInvalid = errors.New("not a buntdb file")

// CountOptions say when the count is taken.
type CountOptions struct {
	// Now decides which expiring keys are still alive, as buntdb decides when it loads the file; zero is
	// time.Now().
	Now time.Time
	// ModTime is the file's modification time, from which buntdb counts the relative expiries ("ex") of
	// files written before buntdb v1.2 (later versions write absolute ones, "ae"); zero is Now.
	ModTime time.Time
}

// Result is what Count found.
type Result struct {
	Counts
	// Bytes is the length of the complete commands; TornTail the length of what follows them and ends
	// mid-command, which buntdb drops (and truncates) when it loads the file.
	Bytes, TornTail int64
}

// keyHash is what the counter keeps of a key: its SHA-256, cut to 128 bits, so that a key of any length
// costs the same few bytes.
type keyHash [16]byte

// Limits of what the counter keeps of one command: buntdb's own header lines are a few digits, its
// command names at most seven letters, an expiry a decimal int64, the schema a small number.
const (
	maxHeaderLine = 32
	keepCommand   = 8
	keepKey       = 64
	keepArg       = 32
)

// Count reads a buntdb file from r as buntdb loads it (set with and without expiry, del, flushdb; a torn
// last command dropped) and counts ergo's accounts and channels. It keeps the hashes of account and
// channel keys only, never the stream: memory grows with the number of accounts and channels, not with
// the file's size (an append-only file grows with every rewrite of the same keys).
func Count(r io.Reader, opts CountOptions) (Result, error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	mod := opts.ModTime
	if mod.IsZero() {
		mod = now
	}
	c := &counter{r: bufio.NewReaderSize(r, 64<<10), accounts: map[keyHash]bool{}, channels: map[keyHash]bool{}}
	for {
		err := c.command(now, mod)
		if err == nil {
			c.done = c.read
			continue
		}
		res := Result{Bytes: c.done, TornTail: c.read - c.done}
		for _, expiring := range c.accounts {
			if expiring {
				res.PendingAccounts++
			} else {
				res.Accounts++
			}
		}
		for _, expiring := range c.channels {
			if !expiring {
				res.Channels++
			}
		}
		res.Schema = c.schema
		switch {
		case errors.Is(err, io.EOF) && c.read == c.done:
			return res, nil
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return res, nil // a torn tail: buntdb drops it too
		default:
			return res, err
		}
	}
}

type counter struct {
	r *bufio.Reader
	// read is the bytes read so far; done those of the complete commands.
	read, done int64
	// accounts and channels map the hashes of the live keys to whether they expire.
	accounts, channels map[keyHash]bool
	schema             string
}

// part is what the counter keeps of one bulk string.
type part struct {
	kept []byte
	n    int
	hash keyHash
}

// command reads and applies one command. It returns io.EOF at the end of the stream before a command,
// io.ErrUnexpectedEOF inside one, ErrInvalid (wrapped) for anything buntdb would refuse.
func (c *counter) command(now, mod time.Time) error {
	b, err := c.r.ReadByte()
	if err != nil {
		return err
	}
	c.read++
	if b == 0 {
		return nil // buntdb skips nul bytes
	}
	if err := c.r.UnreadByte(); err != nil {
		return err
	}
	c.read--
	n, err := c.header('*')
	if err != nil {
		return err
	}
	parts := make([]part, 0, 5)
	for i := range n {
		size, err := c.header('$')
		if err != nil {
			return unexpected(err)
		}
		keep := keepArg
		switch i {
		case 0:
			keep = keepCommand
		case 1:
			keep = keepKey
		}
		p, err := c.bulk(size, keep, i == 1)
		if err != nil {
			return unexpected(err)
		}
		if len(parts) < 6 {
			parts = append(parts, p)
		}
	}
	return c.apply(parts, n, now, mod)
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// header reads a line "<mark><decimal>\r\n".
func (c *counter) header(mark byte) (int, error) {
	var line []byte
	for {
		b, err := c.r.ReadByte()
		if err != nil {
			if len(line) > 0 {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		c.read++
		line = append(line, b)
		if b == '\n' {
			break
		}
		if len(line) > maxHeaderLine {
			return 0, fmt.Errorf("%w: a header line longer than %d bytes at offset %d", ErrInvalid, maxHeaderLine, c.done)
		}
	}
	if len(line) < 4 || line[0] != mark || line[len(line)-2] != '\r' {
		return 0, fmt.Errorf("%w: bad header line at offset %d", ErrInvalid, c.done)
	}
	n := 0
	for _, d := range line[1 : len(line)-2] {
		if d < '0' || d > '9' {
			return 0, fmt.Errorf("%w: bad header line at offset %d", ErrInvalid, c.done)
		}
		n = n*10 + int(d-'0')
		if n > 1<<40 {
			return 0, fmt.Errorf("%w: a length beyond reason at offset %d", ErrInvalid, c.done)
		}
	}
	return n, nil
}

// bulk reads size bytes and their "\r\n", keeping the first keep bytes and, when hashKey, the SHA-256
// of all of them.
func (c *counter) bulk(size, keep int, hashKey bool) (part, error) {
	p := part{n: size}
	h := sha256.New()
	kept := &keeper{limit: keep}
	w := io.Writer(kept)
	if hashKey {
		w = io.MultiWriter(kept, h)
	}
	m, err := io.CopyN(w, c.r, int64(size))
	c.read += m
	if err != nil {
		return p, err
	}
	var end [2]byte
	k, err := io.ReadFull(c.r, end[:])
	c.read += int64(k)
	if err != nil {
		return p, err
	}
	if end != [2]byte{'\r', '\n'} {
		return p, fmt.Errorf("%w: a bulk string not ended by CRLF at offset %d", ErrInvalid, c.done)
	}
	p.kept = kept.buf
	if hashKey {
		copy(p.hash[:], h.Sum(nil))
	}
	return p, nil
}

type keeper struct {
	buf   []byte
	limit int
}

func (k *keeper) Write(b []byte) (int, error) {
	if room := k.limit - len(k.buf); room > 0 {
		k.buf = append(k.buf, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

// apply changes the counts as buntdb's load changes the database for the command.
func (c *counter) apply(parts []part, n int, now, mod time.Time) error {
	if n == 0 {
		return nil
	}
	name := parts[0]
	if name.n < 3 {
		return fmt.Errorf("%w: command %q at offset %d", ErrInvalid, name.kept, c.done)
	}
	prefix := bytes.ToLower(name.kept[:3])
	switch {
	case string(prefix) == "set":
		if n < 3 || n == 4 || n > 5 {
			return fmt.Errorf("%w: set with %d arguments at offset %d", ErrInvalid, n-1, c.done)
		}
		if n == 5 {
			arg := string(bytes.ToLower(parts[3].kept))
			if parts[3].n != 2 || (arg != "ex" && arg != "ae") {
				return fmt.Errorf("%w: set option %q at offset %d", ErrInvalid, parts[3].kept, c.done)
			}
			if parts[4].n > keepArg {
				return fmt.Errorf("%w: expiry too long at offset %d", ErrInvalid, c.done)
			}
			ex, err := strconv.ParseInt(string(parts[4].kept), 10, 64)
			if err != nil {
				return fmt.Errorf("%w: expiry at offset %d: %v", ErrInvalid, c.done, err)
			}
			exat := time.Unix(ex, 0)
			if arg == "ex" {
				exat = mod.Add(time.Duration(ex) * time.Second)
			}
			if !exat.After(now) {
				c.del(parts[1])
				return nil
			}
			c.set(parts[1], parts[2], true)
			return nil
		}
		c.set(parts[1], parts[2], false)
	case string(prefix) == "del":
		if n != 2 {
			return fmt.Errorf("%w: del with %d arguments at offset %d", ErrInvalid, n-1, c.done)
		}
		c.del(parts[1])
	case name.n == len("flushdb") && string(bytes.ToLower(name.kept)) == "flushdb":
		clear(c.accounts)
		clear(c.channels)
		c.schema = ""
	default:
		return fmt.Errorf("%w: command %q at offset %d", ErrInvalid, name.kept, c.done)
	}
	return nil
}

func (c *counter) set(key, value part, expiring bool) {
	switch {
	case bytes.HasPrefix(key.kept, []byte(AccountExistsPrefix)):
		c.accounts[key.hash] = expiring
	case bytes.HasPrefix(key.kept, []byte(ChannelPrefix)):
		c.channels[key.hash] = expiring
	case key.n == len(SchemaVersionKey) && string(key.kept) == SchemaVersionKey:
		c.schema = string(value.kept)
		if value.n > keepArg {
			c.schema = "(too long)"
		}
	}
}

func (c *counter) del(key part) {
	switch {
	case bytes.HasPrefix(key.kept, []byte(AccountExistsPrefix)):
		delete(c.accounts, key.hash)
	case bytes.HasPrefix(key.kept, []byte(ChannelPrefix)):
		delete(c.channels, key.hash)
	case key.n == len(SchemaVersionKey) && string(key.kept) == SchemaVersionKey:
		c.schema = ""
	}
}
