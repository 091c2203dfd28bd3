package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// iotNATS is the demo's NATS server, started beside the cluster before the operator: it enforces the
// fleet's permissions as shipped (fleet-auth's configuration), so the operator gets the operator's
// credentials and each simulated device its own.
var iotNATS *fleettest.Authorized

// The iot scenario: the sample Deployment selects devices labelled site=lyon, tier=edge; the demo starts
// a NATS server with JetStream on 127.0.0.1 and six simulated devices, five of them selected and one at
// another site (the real agent, a fake container runtime instead of podman, which this machine does not
// have), and the counters move to Succeeded on the five.
func init() {
	register(Scenario{
		Name:    "iot",
		Title:   "Deployment, containers on a fleet of devices over NATS JetStream (iot.nationtech.io/v1alpha1)",
		Samples: []string{"iot_v1alpha1_deployment.yaml"},
		Follow:  iotv1.GroupVersion.WithKind("Deployment"),
		// The operator refuses targeting that --iot-fleet-policy does not list (docs/iot.md, "Tenancy and
		// image policy"): the sample's namespace may target the devices of its two sites.
		// The NATS server starts here, so that the operator connects with its credentials from the start.
		Operator: func(context.Context, string) ([]string, func(), error) {
			srv, err := fleettest.StartAuthorizedServer(nil)
			if err != nil {
				return nil, nil, err
			}
			iotNATS = srv
			return []string{"--iot-fleet-policy=*=site:lyon|paris", "--nats-url=" + srv.ClientURL(),
				"--nats-credentials-file=" + srv.OperatorCreds, "--iot-fleet-account-jwt=" + srv.AccountJWT()}, srv.Shutdown, nil
		},
		Steps: func(obj client.Object) []Step {
			return []Step{
				Play(playFleet),
				WaitFor("Waiting for the devices to run the score (the counters move from Pending to Succeeded)", ConditionTrue(iotv1.ConditionReady)),
			}
		},
		Show: iotShow,
		Kubectl: func(obj client.Object) []string {
			return []string{"get deployments.iot.nationtech.io", "describe deployments.iot.nationtech.io " + obj.GetName()}
		},
	})
}

// playFleet starts the simulated devices, each on its own connection with its own device credentials;
// they stop when the demo ends.
func playFleet(ctx context.Context, e *Env, obj client.Object) error {
	if iotNATS == nil {
		return fmt.Errorf("the NATS server did not start")
	}
	e.Step("Six simulated devices connect to the NATS server on %s, each with its own credentials", iotNATS.ClientURL())
	// The devices bind to the buckets, which the operator creates once connected: make them now (as the
	// operator does, with its credentials) rather than wait for it, as fleet-agent does.
	nc, _, err := iotNATS.ConnectOperator(ctx, 0)
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, nc.Close)
	labels := map[string]string{"site": "lyon", "tier": "edge"}
	var devices []*fleettest.Device
	stop := func() {
		for _, d := range devices {
			d.Stop()
		}
	}
	for i := range 6 {
		id, l := fmt.Sprintf("pi-%d", i), labels
		if i == 5 {
			id, l = "pi-paris", map[string]string{"site": "paris", "tier": "edge"}
		}
		d, err := iotNATS.StartDevice(ctx, id, l, nil)
		if err != nil {
			stop()
			return err
		}
		devices = append(devices, d)
	}
	context.AfterFunc(ctx, stop)
	e.Printf("devices pi-0 ... pi-4 (site=lyon, tier=edge) and pi-paris (site=paris): the real agent, with a fake " +
		"container runtime standing in for podman, which this machine does not have; the server lets each " +
		"write only its own records and read only its own desired state (docs/fleet.md, Identity and permissions)")
	e.Printf("the operator connects to NATS on its own (it retries every few seconds) and publishes the desired state")
	return nil
}

// iotShow prints the Deployment like kubectl get, its conditions, the devices' desired state in NATS,
// and its events.
func iotShow(ctx context.Context, e *Env, obj client.Object) {
	d := obj.(*iotv1.Deployment)
	e.Step("iot Deployments (like kubectl get deployments.iot.nationtech.io -n %s)", d.Namespace)
	a := d.Status.Aggregate
	ready := readyStatus(d.Status.Conditions)
	e.Table([]string{"NAME", "MATCHED", "SUCCEEDED", "FAILED", "PENDING", "READY", "AGE"}, [][]string{{
		d.Name, fmt.Sprint(a.MatchedDevices), fmt.Sprint(a.Succeeded), fmt.Sprint(a.Failed), fmt.Sprint(a.Pending), ready, Age(d.CreationTimestamp.Time),
	}})
	e.Conditions("Deployment", d, d.Status.Conditions)
	if iotNATS != nil && e.OperatorRuns() {
		iotShowDesired(ctx, e, d)
	}
	e.Events(ctx, e.Client, "Deployment", d)
	if c := meta.FindStatusCondition(d.Status.Conditions, iotv1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
		e.Blank()
		e.Printf("Ready is True: every selected device reported Running for generation %d; pi-paris was not selected.", d.Generation)
	}
}

func iotShowDesired(ctx context.Context, e *Env, d *iotv1.Deployment) {
	nc, st, err := iotNATS.ConnectOperator(ctx, 0)
	if err != nil {
		e.Printf("(NATS: %v)", err)
		return
	}
	defer nc.Close()
	key := fleet.DeploymentKey{Namespace: d.Namespace, Name: d.Name}
	e.Step("Desired state in bucket %s, and what each device reports in %s", fleet.BucketDesired, fleet.BucketState)
	var rows [][]string
	_ = st.EachDesired(ctx, key, func(device string, des *fleet.Desired) {
		phase := "-"
		if s, err := st.StateOf(ctx, key, device); err == nil && s != nil {
			phase = fmt.Sprintf("%s (gen %d)", s.Phase, s.Generation)
		}
		rows = append(rows, []string{fleet.DesiredKey(device, key), fmt.Sprint(des.Generation), phase})
	})
	e.Table([]string{"KEY", "GENERATION", "STATE"}, rows)
}
