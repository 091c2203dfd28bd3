package iot

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// Flags are the iot group's command-line flags (docs/iot.md); BindFlags binds them and Options reads
// them once the command line is parsed.
type Flags struct {
	natsURL, natsCreds, natsCA, natsCert, natsKey *string
	heartbeatTTL                                  *time.Duration
	maxDevices, deploymentsPerDevice, replicas    *int
	fleetPolicy, registries, accountJWT           *string
	requireDigest                                 *bool
	broker                                        *string
}

// FlagFleetBroker names the FleetBroker (NAMESPACE/NAME) the operator connects to instead of --nats-url.
const FlagFleetBroker = "iot-fleet-broker"

// FlagFleetReplicas is the replica count of the fleet's buckets on a NATS cluster of one's own.
const FlagFleetReplicas = "iot-fleet-replicas"

// BindFlags defines the iot flags on fs. Their defaults come from the environment where an OLM
// Subscription sets them (NATS_URL, IOT_FLEET_POLICY, IOT_ALLOWED_REGISTRIES, IOT_REQUIRE_DIGEST).
func BindFlags(fs *flag.FlagSet) *Flags {
	return &Flags{
		natsURL:              fs.String("nats-url", os.Getenv("NATS_URL"), "URL of the NATS server (JetStream) of the IoT fleet, e.g. nats://nats.iot:4222 (default $NATS_URL); empty runs the iot Deployment controller without NATS: each Deployment then says NATSNotConfigured (docs/iot.md)."),
		natsCreds:            fs.String("nats-credentials-file", "", "NATS .creds file (user JWT and nkey seed) for --nats-url, mounted from a Secret; NATS_USER and NATS_PASSWORD in the environment authenticate with a user and password instead."),
		natsCA:               fs.String("nats-ca-file", "", "PEM file of the CAs that sign the NATS server's certificate; set, the connection to --nats-url requires TLS."),
		natsCert:             fs.String("nats-cert-file", "", "PEM client certificate for a NATS server that verifies clients (with --nats-key-file)."),
		natsKey:              fs.String("nats-key-file", "", "PEM key of --nats-cert-file."),
		heartbeatTTL:         fs.Duration("nats-heartbeat-ttl", 30*time.Second, "How long an IoT device counts as alive after its agent's last heartbeat."),
		maxDevices:           fs.Int("iot-fleet-max-devices", store.DefaultMaxDevices, "How many devices the fleet may have: sizes the fleet's JetStream buckets (message and byte limits, the consumers of the desired bucket), which nats-server enforces and reserves against its storage (docs/fleet.md, Limits)."),
		replicas:             fs.Int(FlagFleetReplicas, 0, "With --nats-url on a JetStream cluster: how many servers keep each of the fleet's buckets, 1, 3 or 5 (3 survives losing a server). 0 keeps what an existing bucket has and creates a missing one with 1. A FleetBroker gives the operator its own count (docs/fleet-broker.md)."),
		deploymentsPerDevice: fs.Int("iot-fleet-deployments-per-device", store.DefaultDeploymentsPerDevice, "How many iot Deployments a device runs at once on average: sizes the desired and state buckets with --iot-fleet-max-devices."),
		fleetPolicy:          fs.String(FlagFleetPolicy, os.Getenv("IOT_FLEET_POLICY"), "Which devices each namespace's iot Deployments may target: NAMESPACE=KEY:VALUE|VALUE (the selector must require label KEY to be one of the VALUEs) or NAMESPACE=* (any selector, {} included), entries separated by ; (NAMESPACE * for namespaces no entry names); empty allows no targeting (default $IOT_FLEET_POLICY, which an OLM Subscription can set; docs/iot.md, Tenancy and image policy)."),
		accountJWT:           fs.String(FlagFleetAccountJWT, os.Getenv("IOT_FLEET_ACCOUNT_JWT"), "The fleet account's JWT (account.jwt, written by fleet-auth init, revoke and update-permissions): the operator trusts the labels of a device's credential only when that account's device signing key signed it, for that device, unexpired and unrevoked. A namespace whose --iot-fleet-policy names label keys matches those keys against credential labels only, so without it such a namespace targets no device (default $IOT_FLEET_ACCOUNT_JWT; docs/fleet.md, Credential labels)."),
		registries:           fs.String(FlagAllowedRegistries, os.Getenv("IOT_ALLOWED_REGISTRIES"), "Comma-separated registries iot Deployment images may come from: a host (any port), host:port, or host/path prefix (docker.io/library for official Docker Hub images); empty allows any (default $IOT_ALLOWED_REGISTRIES)."),
		broker:               fs.String(FlagFleetBroker, os.Getenv("IOT_FLEET_BROKER"), "NAMESPACE/NAME of the FleetBroker whose NATS the operator connects to: its client URL, the operator's credentials and CA are read from the broker and its Secrets, retried until it is Ready, and the fleet's buckets get its replica count (default $IOT_FLEET_BROKER; docs/fleet-broker.md). Exclusive with --nats-url."),
		requireDigest:        fs.Bool(FlagRequireDigest, os.Getenv("IOT_REQUIRE_DIGEST") == "true", "Refuse iot Deployment images not pinned by digest (image@sha256:...); default true when $IOT_REQUIRE_DIGEST is true."),
	}
}

// Options are the group's options from the parsed flags, NATS_USER and NATS_PASSWORD, with workers
// Deployments reconciled at once.
func (f *Flags) Options(workers int) (Options, error) {
	// The parsers' errors name their flag already (nspolicy's "--FLAG entry ...", ParseRegistries'
	// "--FLAG: ..."): wrapped again, the flag was named twice.
	fleetPolicy, err := ParseFleetPolicy(*f.fleetPolicy)
	if err != nil {
		return Options{}, err
	}
	registries, err := ParseRegistries(*f.registries)
	if err != nil {
		return Options{}, err
	}
	var creds *auth.Verifier
	if *f.accountJWT != "" {
		if creds, err = auth.LoadVerifier(*f.accountJWT); err != nil {
			return Options{}, fmt.Errorf("--%s: %w", FlagFleetAccountJWT, err)
		}
	}
	opts := Options{MaxConcurrentReconciles: workers, Credentials: creds, Policy: Policy{
		Fleet: fleetPolicy, Images: ImagePolicy{Registries: registries, RequireDigest: *f.requireDigest}}}
	switch *f.replicas {
	case 0, 1, 3, 5:
	default:
		return Options{}, fmt.Errorf("--%s=%d: want 1, 3 or 5 (an even count survives no more lost servers than one fewer), or 0 to keep what the buckets have", FlagFleetReplicas, *f.replicas)
	}
	if *f.broker != "" {
		if *f.replicas != 0 {
			return Options{}, fmt.Errorf("--%s and --%s are exclusive: the FleetBroker's replica count sizes its buckets", FlagFleetReplicas, FlagFleetBroker)
		}
		if *f.natsURL != "" {
			return Options{}, fmt.Errorf("--nats-url and --%s are exclusive: the operator connects either to a NATS server you run or to the FleetBroker it runs; set one", FlagFleetBroker)
		}
		ns, name, ok := strings.Cut(*f.broker, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return Options{}, fmt.Errorf("--%s=%q: want NAMESPACE/NAME of a FleetBroker", FlagFleetBroker, *f.broker)
		}
		opts.NATS = &NATSOptions{Broker: &types.NamespacedName{Namespace: ns, Name: name}, HeartbeatTTL: *f.heartbeatTTL,
			Limits: store.Limits{Devices: *f.maxDevices, DeploymentsPerDevice: *f.deploymentsPerDevice}}
		return opts, nil
	}
	if *f.natsURL != "" {
		// Connected in the background, retried until NATS answers: the other APIs do not wait for it.
		opts.NATS = &NATSOptions{URL: *f.natsURL, CredentialsFile: *f.natsCreds, CAFile: *f.natsCA, CertFile: *f.natsCert, KeyFile: *f.natsKey,
			User: os.Getenv("NATS_USER"), Password: os.Getenv("NATS_PASSWORD"), HeartbeatTTL: *f.heartbeatTTL,
			Limits: store.Limits{Devices: *f.maxDevices, DeploymentsPerDevice: *f.deploymentsPerDevice, Replicas: *f.replicas}}
	}
	return opts, nil
}
