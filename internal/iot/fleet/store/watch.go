package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// DesiredWatchInactive is how long the server keeps a device's desired-state consumer after its agent
// stopped pulling (an agent that died without deleting it).
const DesiredWatchInactive = 5 * time.Minute

// DesiredWatch is a device's watch of its own desired state through the one consumer its permissions
// allow it: named after the device (fleet.DesiredConsumer), filtered to its keys. A device can therefore
// hold one consumer of the desired bucket at a time, which the server enforces (docs/fleet.md, "Limits").
type DesiredWatch struct {
	updates chan jetstream.KeyValueEntry
	stop    func()
	done    chan struct{}
}

// Updates delivers every current desired state of the device (the last record of each key), then each
// change; it is closed when the watch ends (Stop, a lost message, an error): watch again.
func (w *DesiredWatch) Updates() <-chan jetstream.KeyValueEntry { return w.updates }

// Stop ends the watch and deletes its consumer.
func (w *DesiredWatch) Stop() {
	w.stop()
	<-w.done
}

// WatchDesired starts device's watch of its desired state. It replaces the device's consumer (so a
// restarted agent begins again from every current record).
func (s *Store) WatchDesired(ctx context.Context, device string) (*DesiredWatch, error) {
	if s.js == nil {
		return nil, errors.New("no JetStream connection")
	}
	stream := kvStream(fleet.BucketDesired)
	name := fleet.DesiredConsumer(device)
	if err := s.js.DeleteConsumer(ctx, stream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("delete the previous desired-state consumer: %w", err)
	}
	cons, err := s.js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Name: name, FilterSubject: "$KV." + fleet.BucketDesired + "." + fleet.DesiredDeviceFilter(device),
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, AckPolicy: jetstream.AckNonePolicy,
		InactiveThreshold: DesiredWatchInactive, MemoryStorage: true,
	})
	if err != nil {
		return nil, fmt.Errorf("create the desired-state consumer: %w", err)
	}
	it, err := cons.Messages(jetstream.PullHeartbeat(5 * time.Second))
	if err != nil {
		return nil, fmt.Errorf("pull the desired state: %w", err)
	}
	w := &DesiredWatch{updates: make(chan jetstream.KeyValueEntry), done: make(chan struct{})}
	wctx, cancel := context.WithCancel(context.Background())
	w.stop = func() {
		cancel()
		it.Stop()
	}
	go func() {
		defer close(w.done)
		defer func() {
			dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer dcancel()
			_ = s.js.DeleteConsumer(dctx, stream, name)
		}()
		defer close(w.updates)
		var last uint64
		for {
			m, err := it.Next()
			if err != nil {
				return
			}
			meta, err := m.Metadata()
			if err != nil || (last != 0 && meta.Sequence.Consumer != last+1) {
				return // a lost message: the caller watches again and gets every record again
			}
			last = meta.Sequence.Consumer
			select {
			case w.updates <- desiredEntry{m: m, rev: meta.Sequence.Stream, at: meta.Timestamp}:
			case <-wctx.Done():
				return
			}
		}
	}()
	return w, nil
}

// desiredEntry is a message of the desired bucket as a KeyValueEntry.
type desiredEntry struct {
	m   jetstream.Msg
	rev uint64
	at  time.Time
}

func (e desiredEntry) Bucket() string { return fleet.BucketDesired }
func (e desiredEntry) Key() string {
	return strings.TrimPrefix(e.m.Subject(), "$KV."+fleet.BucketDesired+".")
}
func (e desiredEntry) Value() []byte      { return e.m.Data() }
func (e desiredEntry) Revision() uint64   { return e.rev }
func (e desiredEntry) Created() time.Time { return e.at }
func (e desiredEntry) Delta() uint64      { return 0 }
func (e desiredEntry) Operation() jetstream.KeyValueOp {
	switch e.m.Headers().Get("KV-Operation") {
	case "DEL":
		return jetstream.KeyValueDelete
	case "PURGE":
		return jetstream.KeyValuePurge
	}
	return jetstream.KeyValuePut
}
