package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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

// churn edits objects [0, n) round robin at rate edits per second for d, and returns how many edits it
// sent. The tracker hears of each edit just before it is sent. An object whose last edit is not applied
// yet is passed over for the next one, and a tick that finds every object waiting sends nothing: an
// operator slower than the rate gets fewer edits (the report's count of edits sent says so) rather than
// edits that overtake each other, whose latencies could not be told apart.
func churn(ctx context.Context, c client.Client, w Workload, t *tracker, namespace string, n int, rate float64, d time.Duration) (int, error) {
	rate = w.Info().churnRate(rate, n)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	deadline := time.Now().Add(d)
	sent, next := 0, 0
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return sent, ctx.Err()
		case <-tick.C:
		}
		for tries := 0; tries < n; tries++ {
			i := next % n
			next++
			err := t.startEdit(w.ObjectName(i), sent)
			if errors.Is(err, errEditPending) {
				continue
			}
			if err != nil {
				return sent, err
			}
			if err := w.Edit(ctx, c, namespace, i, sent); err != nil {
				return sent, err
			}
			sent++
			break
		}
	}
	return sent, nil
}
