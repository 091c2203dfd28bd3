package iot

import (
	"flag"
	"strconv"
	"strings"
	"testing"
)

// optionsOf is Options read from the operator's command line args.
func optionsOf(t *testing.T, args ...string) (Options, error) {
	t.Helper()
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.Options(1)
}

// A malformed policy flag is refused by Options with an error that names the flag once.
func TestFlagsNameAMalformedFlagOnce(t *testing.T) {
	options := func(args ...string) error {
		_, err := optionsOf(t, args...)
		return err
	}
	for _, tt := range []struct{ flag, value string }{
		{FlagFleetPolicy, "team-a"},
		{FlagAllowedRegistries, "bad registry"},
	} {
		err := options("--" + tt.flag + "=" + tt.value)
		if err == nil || strings.Count(err.Error(), "--"+tt.flag) != 1 {
			t.Errorf("--%s=%q: Options error %v, want one naming the flag once", tt.flag, tt.value, err)
		}
	}
	// Control: well-formed values pass.
	if err := options("--"+FlagFleetPolicy+"=team-a=site:lyon", "--"+FlagAllowedRegistries+"=registry.example.com"); err != nil {
		t.Errorf("well-formed flags: %v", err)
	}
}

// --iot-fleet-broker connects to a FleetBroker; with --nats-url too, the operator refuses to start.
func TestFlagsFleetBroker(t *testing.T) {
	o, err := optionsOf(t, "--"+FlagFleetBroker+"=iot/fleet")
	if err != nil || o.NATS == nil || o.NATS.Broker == nil || o.NATS.Broker.String() != "iot/fleet" || o.NATS.URL != "" {
		t.Fatalf("--%s=iot/fleet: %+v, %v", FlagFleetBroker, o.NATS, err)
	}
	if _, err := optionsOf(t, "--"+FlagFleetBroker+"=iot/fleet", "--nats-url=nats://nats:4222"); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Errorf("both set: %v, want a refusal naming them exclusive", err)
	}
	for _, bad := range []string{"fleet", "/fleet", "iot/", "a/b/c"} {
		if _, err := optionsOf(t, "--"+FlagFleetBroker+"="+bad); err == nil {
			t.Errorf("--%s=%s accepted", FlagFleetBroker, bad)
		}
	}
	// Control: --nats-url alone still works.
	if o, err := optionsOf(t, "--nats-url=nats://nats:4222"); err != nil || o.NATS == nil || o.NATS.Broker != nil {
		t.Errorf("--nats-url alone: %+v, %v", o.NATS, err)
	}
}

// --iot-fleet-replicas sizes the buckets on a cluster of one's own: 1, 3 or 5, or 0 to keep what they have;
// a FleetBroker brings its own count, so the two are refused together.
func TestFlagsFleetReplicas(t *testing.T) {
	for _, n := range []string{"0", "1", "3", "5"} {
		o, err := optionsOf(t, "--nats-url=nats://nats:4222", "--"+FlagFleetReplicas+"="+n)
		if err != nil || o.NATS == nil || strconv.Itoa(o.NATS.Limits.Replicas) != n {
			t.Errorf("--%s=%s: %+v, %v", FlagFleetReplicas, n, o.NATS, err)
		}
	}
	for _, bad := range []string{"2", "4", "-1", "7"} {
		if _, err := optionsOf(t, "--nats-url=nats://nats:4222", "--"+FlagFleetReplicas+"="+bad); err == nil || !strings.Contains(err.Error(), "--"+FlagFleetReplicas) {
			t.Errorf("--%s=%s: %v, want a refusal naming the flag", FlagFleetReplicas, bad, err)
		}
	}
	if _, err := optionsOf(t, "--"+FlagFleetBroker+"=iot/fleet", "--"+FlagFleetReplicas+"=3"); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Errorf("with a FleetBroker: %v, want a refusal naming them exclusive", err)
	}
}
