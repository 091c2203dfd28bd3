package manager_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// An unlisted kind (CacheRule.Unlisted) is still got by name from the cache, typed and as metadata, but a
// List by namespace fails instead of answering empty; a listed kind (the control) lists as always.
func TestUnlistedKindKeepsNoNamespaceIndex(t *testing.T) {
	env := sharedEnv
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns, err := testenv.CreateNamespace(ctx, env.Client, "unlisted")
	if err != nil {
		t.Fatal(err)
	}
	managed := map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName}
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sa", Labels: managed}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm", Labels: managed}},
	} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	group := manager.Group{Name: "test", Cache: func(platform.Capabilities) []manager.CacheRule {
		return []manager.CacheRule{{Object: &corev1.ServiceAccount{}, Unlisted: true}, {Object: &corev1.ConfigMap{}}}
	}}
	mgr, err := manager.New(env.Config, testenv.ManagerOptions(nil), platform.Capabilities{}, group)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()
	c := mgr.GetClient()
	getCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if !mgr.GetCache().WaitForCacheSync(getCtx) {
		t.Fatal("the cache did not start")
	}

	if err := c.Get(getCtx, client.ObjectKey{Namespace: ns, Name: "sa"}, &corev1.ServiceAccount{}); err != nil {
		t.Fatalf("get an unlisted kind by name: %v", err)
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccount"))
	if err := c.Get(getCtx, client.ObjectKey{Namespace: ns, Name: "sa"}, meta); err != nil {
		t.Fatalf("get an unlisted kind's metadata by name: %v", err)
	}
	var sas corev1.ServiceAccountList
	if err := c.List(getCtx, &sas, client.InNamespace(ns)); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("List of an unlisted kind by namespace = %d items, %v; want the missing index's error", len(sas.Items), err)
	}
	metas := &metav1.PartialObjectMetadataList{}
	metas.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccountList"))
	if err := c.List(getCtx, metas, client.InNamespace(ns)); err == nil {
		t.Errorf("List of an unlisted kind's metadata by namespace = %d items, want the missing index's error", len(metas.Items))
	}
	var cms corev1.ConfigMapList
	if err := c.List(getCtx, &cms, client.InNamespace(ns)); err != nil || len(cms.Items) != 1 {
		t.Errorf("List of a listed kind by namespace = %d items, %v; want 1", len(cms.Items), err)
	}
}
