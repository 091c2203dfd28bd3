package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/ergo"
)

// operHash is a valid bcrypt hash (cost 4: the operator checks the format, never the password).
var operHash = func() []byte {
	h, err := bcrypt.GenerateFromPassword([]byte("bench"), bcrypt.MinCost)
	if err != nil {
		panic(err)
	}
	return h
}()

func networkName(i int) string { return fmt.Sprintf("net-%05d", i) }

// network is the bench's ErgoNetwork: the sample's shape (plaintext and TLS listeners, a cert-manager
// certificate, a Route, an oper Secret, storage and resources), so it has all six children.
func network(namespace string, i int) *ircv1.ErgoNetwork {
	name := networkName(i)
	size := resource.MustParse("1Gi")
	return &ircv1.ErgoNetwork{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: ircv1.ErgoNetworkSpec{
			Hostname:        name + ".bench.example",
			NetworkName:     "Bench",
			OperCredentials: &ircv1.OperCredentials{SecretName: name + "-oper"},
			Listeners:       []ircv1.Listener{{Address: ":6697", TLS: true}, {Address: ":6667"}},
			TLS:             &ircv1.TLSSpec{IssuerRef: ircv1.IssuerRef{Name: "bench", Kind: "ClusterIssuer"}},
			Route:           &ircv1.RouteSpec{},
			Storage:         ircv1.StorageSpec{Size: &size},
			Resources: &ircv1.ResourceRequirements{
				Requests: map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   map[corev1.ResourceName]resource.Quantity{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
		},
	}
}

// tlsCert stands for the certificate cert-manager would issue: the operator only hashes it.
var tlsCert = func() []byte {
	b := []byte("-----BEGIN CERTIFICATE-----\n")
	for i := range 1200 {
		b = append(b, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[i%64])
		if i%64 == 63 {
			b = append(b, '\n')
		}
	}
	return append(b, "\n-----END CERTIFICATE-----\n"...)
}()

// tlsSecret is the Secret cert-manager writes for a network's Certificate, labelled through the
// Certificate's secretTemplate: in a cluster with cert-manager it exists moments after the Certificate.
// The bench makes it up front, so both the operator's and the floor's runs start with it.
func tlsSecret(namespace string, i int) *corev1.Secret {
	net := network(namespace, i)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ergo.TLSSecretName(net), Labels: ergo.Labels(net)},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: tlsCert, corev1.TLSPrivateKeyKey: []byte("key")},
	}
}

func operSecret(namespace string, i int) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: networkName(i) + "-oper"},
		Data:       map[string][]byte{"password": operHash},
	}
}

// parallel runs f(i) for i in [from, to) on workers goroutines and returns the first error.
func parallel(ctx context.Context, from, to, workers int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	next.Store(int64(from))
	for range min(workers, max(to-from, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

func createNamespace(ctx context.Context, c client.Client, name string) error {
	return client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

// createSecrets creates the oper Secrets (the user's) and TLS Secrets (cert-manager's) of networks
// [from, to), before the clock starts in both the operator's and the floor's runs.
func createSecrets(ctx context.Context, c client.Client, namespace string, from, to, workers int) error {
	return parallel(ctx, from, to, workers, func(ctx context.Context, i int) error {
		if err := c.Create(ctx, operSecret(namespace, i)); err != nil {
			return err
		}
		return c.Create(ctx, tlsSecret(namespace, i))
	})
}

// createNetworks creates networks [from, to), as a user applying many at once would.
func createNetworks(ctx context.Context, c client.Client, namespace string, from, to, workers int) error {
	return parallel(ctx, from, to, workers, func(ctx context.Context, i int) error {
		return c.Create(ctx, network(namespace, i))
	})
}

// floor is the tight client: per network it creates the ErgoNetwork, then its six children exactly as the
// operator builds them (plain creates, no reads), then writes the status once. It is the least work the
// API server can do to reach the state the operator reaches.
func floor(ctx context.Context, c client.Client, namespace string, n, workers int) error {
	return parallel(ctx, 0, n, workers, func(ctx context.Context, i int) error {
		net := network(namespace, i)
		if err := c.Create(ctx, net); err != nil {
			return err
		}
		rendered, err := ergo.RenderConfig(ergo.BuildConfig(net, true))
		if err != nil {
			return err
		}
		children := []client.Object{
			ergo.PVC(net),
			ergo.Certificate(net),
			ergo.ConfigMap(net, rendered),
			ergo.Deployment(net, ergo.Options{Image: "registry.example/ergochat/ergo:bench"}, ergo.ConfigDigest(rendered, operHash, tlsCert)),
			ergo.Service(net),
			ergo.Route(net),
		}
		for _, child := range children {
			if err := c.Create(ctx, child); err != nil {
				return fmt.Errorf("floor: create %T %s: %w", child, child.GetName(), err)
			}
		}
		net.Status = ircv1.ErgoNetworkStatus{
			ObservedGeneration: net.Generation,
			NetworkName:        net.Spec.NetworkName,
			Conditions: []metav1.Condition{{
				Type: "Ready", Status: metav1.ConditionFalse, Reason: "DeploymentPending",
				Message: "floor", LastTransitionTime: metav1.Now(), ObservedGeneration: net.Generation,
			}},
		}
		return c.Status().Update(ctx, net)
	})
}

// unrelated fills namespaces the operator has nothing to do with: n ConfigMaps, n Secrets and n
// Deployments spread over spread namespaces, none carrying the operator's label, each as `kubectl apply`
// would have left it.
func unrelated(ctx context.Context, c client.Client, n, spread, workers int) error {
	for j := range spread {
		if err := createNamespace(ctx, c, fmt.Sprintf("unrelated-%02d", j)); err != nil {
			return err
		}
	}
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	return parallel(ctx, 0, n, workers, func(ctx context.Context, i int) error {
		ns, name := fmt.Sprintf("unrelated-%02d", i%spread), fmt.Sprintf("app-%05d", i)
		meta := func(obj client.Object) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name},
				Annotations: map[string]string{lastApplied: lastAppliedOf(obj)}}
		}
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, Data: map[string]string{"config": string(payload)}}
		cm.ObjectMeta = meta(cm)
		if err := c.Create(ctx, cm); err != nil {
			return err
		}
		secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, Data: map[string][]byte{"token": payload}}
		secret.ObjectMeta = meta(secret)
		if err := c.Create(ctx, secret); err != nil {
			return err
		}
		replicas := int32(1)
		labels := map[string]string{"app": name}
		d := &appsv1.Deployment{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "app", Image: "registry.example/app:1",
						Env: []corev1.EnvVar{{Name: "CONFIG", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "config"}}}},
					}}},
				},
			},
		}
		d.ObjectMeta = meta(d)
		return c.Create(ctx, d)
	})
}

// lastApplied is the annotation `kubectl apply` leaves on what it creates: the object as applied, data
// and all. Most objects in a real cluster carry it.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

func lastAppliedOf(obj client.Object) string {
	data, err := json.Marshal(obj)
	if err != nil {
		panic(err) // plain API types always marshal
	}
	return string(data)
}

// churn edits spec.networkName of networks [0, n) round robin at rate edits per second for d, and
// returns how many edits it sent. Each edit is a merge patch, as kubectl patch would send.
func churn(ctx context.Context, c client.Client, t *tracker, namespace string, n int, rate float64, d time.Duration) (int, error) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	deadline := time.Now().Add(d)
	sent := 0
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return sent, ctx.Err()
		case <-tick.C:
		}
		name := networkName(sent % n)
		marker := fmt.Sprintf("Churn%06d", sent)
		if err := t.startEdit(name, marker); err != nil {
			return sent, err
		}
		patch := fmt.Appendf(nil, `{"spec":{"networkName":%q}}`, marker)
		obj := &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return sent, err
		}
		sent++
	}
	return sent, nil
}
