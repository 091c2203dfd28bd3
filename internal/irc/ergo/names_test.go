package ergo

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNames(t *testing.T) {
	n := referenceNetwork()
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"configmap", ConfigMapName(n), "my-network-config"},
		{"pvc", PVCName(n), "my-network-data"},
		{"tls secret", TLSSecretName(n), "my-network-tls"},
		{"deployment", DeploymentName(n), "my-network"},
		{"service", ServiceName(n), "my-network"},
		{"certificate", CertificateName(n), "my-network"},
		{"route", RouteName(n), "my-network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	n := referenceNetwork()
	want := map[string]string{
		"app.kubernetes.io/name":       "ergo",
		"app.kubernetes.io/instance":   "my-network",
		"app.kubernetes.io/managed-by": "platform-operator",
		"app.kubernetes.io/part-of":    "platform-operator",
	}
	got := Labels(n)
	if len(got) != len(want) {
		t.Fatalf("Labels = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %q, want %q", k, got[k], v)
		}
		if errs := validation.IsValidLabelValue(got[k]); len(errs) > 0 {
			t.Errorf("label %s: %v", k, errs)
		}
	}
	// The selector must pick the pods out by name and instance only, and must match Labels.
	sel := SelectorLabels(n)
	if len(sel) != 2 || sel["app.kubernetes.io/name"] != "ergo" || sel["app.kubernetes.io/instance"] != "my-network" {
		t.Errorf("SelectorLabels = %v", sel)
	}
	if !labels.SelectorFromSet(sel).Matches(labels.Set(got)) {
		t.Errorf("SelectorLabels %v do not match Labels %v", sel, got)
	}
	// Callers may add to the maps they get; that must not leak into the next object.
	got["extra"] = "x"
	if _, leaked := Labels(n)["extra"]; leaked {
		t.Error("Labels returns a shared map")
	}
}

func TestOwnerReference(t *testing.T) {
	n := referenceNetwork()
	ref := OwnerReference(n)
	if ref.APIVersion != "irc.josie.cloud/v1alpha1" || ref.Kind != "ErgoNetwork" || ref.Name != n.Name || ref.UID != n.UID {
		t.Errorf("OwnerReference = %+v", ref)
	}
	if ref.Controller == nil || !*ref.Controller || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("OwnerReference must be the controller and block owner deletion: %+v", ref)
	}
}

// TestCommonMetadata holds every builder to the same contract: TypeMeta set (server-side apply needs
// it), the network's namespace, Labels and exactly one controller reference to the network.
func TestCommonMetadata(t *testing.T) {
	n := referenceNetwork()
	rendered, err := RenderConfig(BuildConfig(n, true))
	if err != nil {
		t.Fatal(err)
	}
	type object interface {
		metav1.Object
		runtime.Object
	}
	tests := []struct {
		name     string
		obj      object
		typeMeta metav1.TypeMeta
	}{
		{"configmap", ConfigMap(n, rendered), metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}},
		{"pvc", PVC(n), metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}},
		{"certificate", Certificate(n), metav1.TypeMeta{APIVersion: "cert-manager.io/v1", Kind: "Certificate"}},
		{"deployment", Deployment(n, Options{}, "digest"), metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}},
		{"service", Service(n), metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}},
		{"route", Route(n), metav1.TypeMeta{APIVersion: "route.openshift.io/v1", Kind: "Route"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gvk := tt.obj.GetObjectKind().GroupVersionKind()
			if apiVersion, kind := gvk.ToAPIVersionAndKind(); apiVersion != tt.typeMeta.APIVersion || kind != tt.typeMeta.Kind {
				t.Errorf("TypeMeta = %s %s, want %s %s", apiVersion, kind, tt.typeMeta.APIVersion, tt.typeMeta.Kind)
			}
			if tt.obj.GetNamespace() != n.Namespace {
				t.Errorf("namespace = %q, want %q", tt.obj.GetNamespace(), n.Namespace)
			}
			if errs := validation.IsDNS1123Subdomain(tt.obj.GetName()); len(errs) > 0 {
				t.Errorf("name %q: %v", tt.obj.GetName(), errs)
			}
			for k, v := range Labels(n) {
				if tt.obj.GetLabels()[k] != v {
					t.Errorf("label %s = %q, want %q", k, tt.obj.GetLabels()[k], v)
				}
			}
			refs := tt.obj.GetOwnerReferences()
			if len(refs) != 1 || !reflect.DeepEqual(refs[0], OwnerReference(n)) {
				t.Errorf("owner references = %+v, want [%+v]", refs, OwnerReference(n))
			}
		})
	}
}

// A backup of the network reads the datastore as the Deployment's user, where the Deployment mounts it.
func TestDatastoreUserAndPathAreTheDeployments(t *testing.T) {
	for _, openShift := range []bool{false, true} {
		d := Deployment(referenceNetwork(), Options{OpenShift: openShift}, "digest")
		want := d.Spec.Template.Spec.SecurityContext.RunAsUser
		got := DatastoreUser(openShift)
		if (got == nil) != (want == nil) || (got != nil && *got != *want) {
			t.Errorf("openShift=%v: DatastoreUser = %v, the Deployment runs as %v", openShift, got, want)
		}
		if openShift != (got == nil) {
			t.Errorf("openShift=%v: DatastoreUser = %v, want a uid only off OpenShift", openShift, got)
		}
		mounted := false
		for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
			mounted = mounted || (m.Name == dataVolume && m.MountPath == DataDir)
		}
		if !mounted {
			t.Errorf("the Deployment does not mount the claim at DataDir %s", DataDir)
		}
	}
	if got, want := datastorePath, DataDir+"/"+DatastoreFile; got != want {
		t.Errorf("ergo's datastore.path = %s, want %s", got, want)
	}
}
