package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// The Kubernetes commands' tests run against envtest: a real kube-apiserver serving the repository's
// CRDs (config/crd/bases), started by the first test that needs it ($KUBEBUILDER_ASSETS names its
// binaries; the test fails without them). No operator runs: the Deployments have no finalizer and no
// status but what a test writes.
var (
	kubeOnce    sync.Once
	kubeEnvErr  error
	kubeEnvVal  *testenv.Env
	kubeConfigs = map[string]string{} // kubeconfig files by default namespace
	kubeMu      sync.Mutex
	kubeDir     string
)

func stopKube() {
	if kubeEnvVal != nil {
		_ = kubeEnvVal.Stop()
	}
	if kubeDir != "" {
		_ = os.RemoveAll(kubeDir)
	}
}

func kubeEnv(t *testing.T) *testenv.Env {
	t.Helper()
	kubeOnce.Do(func() {
		kubeEnvVal, kubeEnvErr = testenv.Start(testenv.Options{})
		if kubeEnvErr == nil {
			kubeDir, kubeEnvErr = os.MkdirTemp("", "fleetctl-kube-")
		}
	})
	if kubeEnvErr != nil {
		t.Fatalf("envtest: %v", kubeEnvErr)
	}
	return kubeEnvVal
}

// kubeconfig is a kubeconfig file for the envtest admin whose context's namespace is namespace ("" for
// none).
func kubeconfig(t *testing.T, namespace string) string {
	t.Helper()
	env := kubeEnv(t)
	kubeMu.Lock()
	defer kubeMu.Unlock()
	if p, ok := kubeConfigs[namespace]; ok {
		return p
	}
	p := filepath.Join(kubeDir, "kubeconfig-"+namespace)
	writeKubeconfig(t, p, env.Config, namespace)
	kubeConfigs[namespace] = p
	return p
}

func writeKubeconfig(t *testing.T, path string, cfg *rest.Config, namespace string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: namespace}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

// kubectl runs fleetctl's Kubernetes commands as main does.
func kubectl(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = run(testCtx, args, &out, &errb)
	return out.String(), errb.String(), code
}

func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := kubectl(args...)
	if code != 0 {
		t.Fatalf("fleetctl %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	return out
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	err := kubeEnv(t).Client.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func getDeployment(t *testing.T, ns, name string) *iotv1.Deployment {
	t.Helper()
	d := &iotv1.Deployment{}
	if err := kubeEnv(t).Client.Get(testCtx, types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// managers is which field managers own fields of obj, by operation.
func managers(obj metav1.Object) map[string]metav1.ManagedFieldsOperationType {
	out := map[string]metav1.ManagedFieldsOperationType{}
	for _, mf := range obj.GetManagedFields() {
		out[mf.Manager] = mf.Operation
	}
	return out
}

// ownsField says whether manager's managed fields name the field path (a fieldsV1 key such as
// "f:paused").
func ownsField(obj metav1.Object, manager, key string) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), `"`+key+`"`) {
			return true
		}
	}
	return false
}

// The reference applier's own command lines (iot_apply_deployment's flags).
var referenceApply = []string{"apply", "--namespace", "iot-demo", "--name", "hello-world", "--target-device", "iot-smoke-vm",
	"--image", "docker.io/library/nginx:latest", "--port", "8080:80"}

func withImage(args []string, image string) []string {
	out := append([]string{}, args...)
	for i := range out {
		if out[i] == "--image" {
			out[i+1] = image
		}
	}
	return out
}

// TestApplyUpgradeDelete is the reference applier's cycle with its own flags: apply creates, apply with
// another --image upgrades only the image (a field another manager set is kept, a no-op apply writes
// nothing), a conflict with another manager is refused without --force-conflicts, --delete removes.
func TestApplyUpgradeDelete(t *testing.T) {
	env := kubeEnv(t)
	createNamespace(t, "iot-demo")
	kc := kubeconfig(t, "")
	args := append(append([]string{}, referenceApply...), "--kubeconfig", kc)

	out := mustKubectl(t, args...)
	if !strings.Contains(out, "hello-world applied in namespace iot-demo") {
		t.Errorf("apply said %q", out)
	}
	d := getDeployment(t, "iot-demo", "hello-world")
	svcs := d.Spec.Score.PodmanV0.Services
	if d.Spec.TargetSelector.MatchLabels[DeviceLabel] != "iot-smoke-vm" || len(d.Spec.TargetSelector.MatchExpressions) != 0 ||
		len(svcs) != 1 || svcs[0].Name != "hello-world" || svcs[0].Image != "docker.io/library/nginx:latest" ||
		len(svcs[0].Ports) != 1 || svcs[0].Ports[0].HostPort != 8080 || svcs[0].Ports[0].ContainerPort != 80 ||
		svcs[0].Ports[0].Protocol != "TCP" || svcs[0].RestartPolicy != iotv1.RestartAlways || d.Spec.Rollout.Strategy != iotv1.RolloutImmediate {
		t.Fatalf("created spec %+v", d.Spec)
	}
	if op := managers(d)[fieldManager]; op != metav1.ManagedFieldsOperationApply {
		t.Fatalf("field managers %v: want %s applying", managers(d), fieldManager)
	}

	// Another manager sets fields fleetctl does not send: a label and spec.paused.
	other := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"paused": true}}}
	other.SetGroupVersionKind(deploymentGVK)
	other.SetNamespace("iot-demo")
	other.SetName("hello-world")
	other.SetLabels(map[string]string{"team": "web"})
	if err := env.Client.Patch(testCtx, other, client.Apply, client.FieldOwner("ops"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	before := getDeployment(t, "iot-demo", "hello-world")

	// Upgrade: the same command with another image; KUBECONFIG instead of --kubeconfig.
	t.Setenv("KUBECONFIG", kc)
	mustKubectl(t, withImage(referenceApply, "nginx:1.26")...)
	d = getDeployment(t, "iot-demo", "hello-world")
	if got := d.Spec.Score.PodmanV0.Services[0].Image; got != "nginx:1.26" {
		t.Errorf("image after the upgrade = %q", got)
	}
	if !d.Spec.Paused || d.Labels["team"] != "web" || !ownsField(d, "ops", "f:paused") {
		t.Errorf("the other manager's fields were not kept: paused=%v labels=%v managers=%v", d.Spec.Paused, d.Labels, managers(d))
	}
	if d.Generation != before.Generation+1 {
		t.Errorf("generation %d after the upgrade, want %d", d.Generation, before.Generation+1)
	}
	d.Spec.Score.PodmanV0.Services[0].Image = before.Spec.Score.PodmanV0.Services[0].Image
	if !reflect.DeepEqual(d.Spec, before.Spec) {
		t.Errorf("the upgrade changed more than the image:\nbefore %+v\nafter  %+v", before.Spec, d.Spec)
	}

	// The same apply again writes nothing, also in another second (the API server rewrites an apply that
	// differs from the stored object only by the schema's defaults whenever the managedFields time moves).
	rv := getDeployment(t, "iot-demo", "hello-world").ResourceVersion
	time.Sleep(1100 * time.Millisecond)
	mustKubectl(t, withImage(referenceApply, "nginx:1.26")...)
	if got := getDeployment(t, "iot-demo", "hello-world").ResourceVersion; got != rv {
		t.Errorf("an unchanged apply wrote: resourceVersion %s -> %s", rv, got)
	}

	// A manager that took the services over: without --force-conflicts fleetctl refuses, with it takes them
	// back (the reference's forced apply, the default).
	svcOwner := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"targetSelector": map[string]any{"matchLabels": map[string]any{DeviceLabel: "iot-smoke-vm"}},
		"score": map[string]any{"type": "PodmanV0", "podmanV0": map[string]any{"services": []any{
			map[string]any{"name": "hello-world", "image": "nginx:hotfix"}}}}}}}
	svcOwner.SetGroupVersionKind(deploymentGVK)
	svcOwner.SetNamespace("iot-demo")
	svcOwner.SetName("hello-world")
	if err := env.Client.Patch(testCtx, svcOwner, client.Apply, client.FieldOwner("hotfix"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	_, errs, code := kubectl(append(withImage(referenceApply, "nginx:1.27"), "--force-conflicts=false")...)
	if code != exitError || !strings.Contains(errs, "conflict") || !strings.Contains(errs, "--force-conflicts") {
		t.Errorf("apply over another manager's fields without force: exit %d, %q", code, errs)
	}
	if got := getDeployment(t, "iot-demo", "hello-world").Spec.Score.PodmanV0.Services[0].Image; got != "nginx:hotfix" {
		t.Errorf("a refused apply changed the image to %q", got)
	}
	mustKubectl(t, withImage(referenceApply, "nginx:1.27")...)
	if got := getDeployment(t, "iot-demo", "hello-world").Spec.Score.PodmanV0.Services[0].Image; got != "nginx:1.27" {
		t.Errorf("forced apply: image %q", got)
	}

	// get: the table, and the object as JSON and YAML. The status is what an operator would write.
	d = getDeployment(t, "iot-demo", "hello-world")
	at := metav1.Now()
	d.Status = iotv1.DeploymentStatus{ObservedGeneration: d.Generation - 1, PublishedDevices: 7,
		Aggregate: iotv1.Aggregate{MatchedDevices: 9, Succeeded: 5, Failed: 1, Pending: 3, Updated: 6, Stale: 2,
			LastError:         &iotv1.DeviceError{DeviceID: "iot-smoke-vm", Device: "iot-smoke-vm", Message: "pull nginx:1.27:\nmanifest unknown", At: at},
			OldestHeartbeatAt: &metav1.Time{Time: time.Date(2026, 11, 29, 6, 12, 0, 0, time.UTC)}},
		RecentEvents: []iotv1.FleetEvent{{At: at, Severity: iotv1.SeverityError, Deployment: "hello-world", Device: "iot-smoke-vm", Phase: "Failed", Message: "pull failed"}},
		Conditions:   []metav1.Condition{{Type: iotv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "DevicesFailed", Message: "1 device failed", LastTransitionTime: at}}}
	if err := env.Client.Status().Update(testCtx, d); err != nil {
		t.Fatal(err)
	}
	out = mustKubectl(t, "get", "-n", "iot-demo", "--name", "hello-world")
	wantRow := regexp.MustCompile(`(?m)^hello-world +9 +5 +1 +3 +6 +2 +7 +False +` + strconv.FormatInt(d.Generation-1, 10) + "/" + strconv.FormatInt(d.Generation, 10) + ` `)
	if !wantRow.MatchString(out) {
		t.Errorf("get --name: no status row matching %s in\n%s", wantRow, out)
	}
	for _, want := range []string{"NAME", "MATCHED", "SUCCEEDED", "Target: device=iot-smoke-vm", "Service hello-world: nginx:1.27", "Paused: true",
		"Ready  False   DevicesFailed", "Last error: device iot-smoke-vm at", "pull nginx:1.27: manifest unknown", "Error     iot-smoke-vm  Failed  pull failed", "Oldest heartbeat: 2026-11-29T06:12:00Z (2 stale)"} {
		if !strings.Contains(out, want) {
			t.Errorf("get --name: no %q in\n%s", want, out)
		}
	}
	var got iotv1.Deployment
	if err := json.Unmarshal([]byte(mustKubectl(t, "get", "-n", "iot-demo", "--name", "hello-world", "-o", "json")), &got); err != nil || got.Name != "hello-world" {
		t.Errorf("get -o json: %v, %q", err, got.Name)
	}
	if err := yaml.Unmarshal([]byte(mustKubectl(t, "get", "-n", "iot-demo", "--name", "hello-world", "-o", "yaml")), &got); err != nil || got.Spec.Score.PodmanV0.Services[0].Image != "nginx:1.27" {
		t.Errorf("get -o yaml: %v, %+v", err, got.Spec)
	}
	if out := mustKubectl(t, "get", "-A"); !strings.Contains(out, "NAMESPACE") || !strings.Contains(out, "iot-demo") {
		t.Errorf("get -A:\n%s", out)
	}

	// --delete (the reference's), then delete of what is gone.
	mustKubectl(t, "apply", "--delete", "--namespace", "iot-demo", "--name", "hello-world")
	err := env.Client.Get(testCtx, types.NamespacedName{Namespace: "iot-demo", Name: "hello-world"}, &iotv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("after --delete: %v", err)
	}
	if _, errs, code := kubectl("delete", "-n", "iot-demo", "--name", "hello-world"); code != exitError || !strings.Contains(errs, "not found") {
		t.Errorf("delete of a missing Deployment: exit %d, %q", code, errs)
	}
	mustKubectl(t, "delete", "-n", "iot-demo", "--name", "hello-world", "--ignore-not-found")
	if out := mustKubectl(t, "get", "-n", "iot-demo"); !strings.Contains(out, "No iot Deployments in namespace iot-demo") {
		t.Errorf("get of an empty namespace: %q", out)
	}
}

// TestNamespaceFromKubeconfig: without --namespace, apply, get and delete use the kubeconfig context's.
func TestNamespaceFromKubeconfig(t *testing.T) {
	createNamespace(t, "ctx-ns")
	kc := kubeconfig(t, "ctx-ns")
	mustKubectl(t, "apply", "--kubeconfig", kc, "--name", "web", "--image", "web:1", "--all-devices")
	d := getDeployment(t, "ctx-ns", "web")
	if d.Spec.TargetSelector.MatchLabels != nil || d.Spec.TargetSelector.MatchExpressions != nil {
		t.Errorf("--all-devices gave selector %+v", d.Spec.TargetSelector)
	}
	if out := mustKubectl(t, "get", "--kubeconfig", kc); !strings.Contains(out, "web") {
		t.Errorf("get: %q", out)
	}
	mustKubectl(t, "delete", "--kubeconfig", kc, "--name", "web")
}

// TestPrintAppliesToTheSameObject: what --print writes, applied by another client as kubectl apply
// --server-side would, gives the object fleetctl apply gives; printing contacts no cluster.
func TestPrintAppliesToTheSameObject(t *testing.T) {
	env := kubeEnv(t)
	createNamespace(t, "print-a")
	createNamespace(t, "print-b")
	flags := []string{"--name", "web", "--selector", "site=lyon,tier in (edge,core),!beta", "--target-device", "pi-7",
		"--image", "registry.example.com/web@sha256:" + strings.Repeat("a", 64), "--port", "8080:80", "--port", "53/udp",
		"--env", "MODE=prod", "--env", "EMPTY=", "--service", "frontend", "--restart", "OnFailure"}
	mustKubectl(t, append([]string{"apply", "--kubeconfig", kubeconfig(t, ""), "-n", "print-a"}, flags...)...)

	// No cluster: a kubeconfig that does not exist, and KUBECONFIG naming another.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	printed := mustKubectl(t, append([]string{"apply", "--print", "--kubeconfig", "/nonexistent/kubeconfig", "-n", "print-b"}, flags...)...)
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(printed), &obj.Object); err != nil {
		t.Fatalf("--print is not YAML: %v\n%s", err, printed)
	}
	if obj.GetNamespace() != "print-b" || obj.GetKind() != "Deployment" || obj.GetAPIVersion() != "iot.nationtech.io/v1alpha1" {
		t.Fatalf("printed %s", printed)
	}
	printedObj := obj.DeepCopy().Object // the patch below fills obj with the server's answer
	if err := env.Client.Patch(testCtx, obj, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	a, b := getDeployment(t, "print-a", "web"), getDeployment(t, "print-b", "web")
	if !reflect.DeepEqual(a.Spec, b.Spec) {
		t.Errorf("applied and printed-then-applied differ:\n%+v\n%+v", a.Spec, b.Spec)
	}
	if a.Spec.TargetSelector.MatchLabels[DeviceLabel] != "pi-7" || a.Spec.TargetSelector.MatchLabels["site"] != "lyon" || len(a.Spec.TargetSelector.MatchExpressions) != 2 {
		t.Errorf("selector %+v", a.Spec.TargetSelector)
	}
	s := a.Spec.Score.PodmanV0.Services[0]
	if s.Name != "frontend" || s.RestartPolicy != iotv1.RestartOnFailure || len(s.Env) != 2 || s.Env[1].Name != "EMPTY" ||
		len(s.Ports) != 2 || s.Ports[1].Protocol != "UDP" || s.Ports[1].ContainerPort != 53 || s.Ports[1].HostPort != 0 {
		t.Errorf("service %+v", s)
	}

	// JSON prints the same object; without --namespace the printed object has none (kubectl's context
	// decides, as with any manifest).
	var fromJSON map[string]any
	if err := json.Unmarshal([]byte(mustKubectl(t, append([]string{"apply", "--print", "-o", "json", "-n", "print-b"}, flags...)...)), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, printedObj) {
		t.Errorf("-o json prints another object:\n%v\n%v", fromJSON, printedObj)
	}
	noNS := mustKubectl(t, append([]string{"apply", "--print"}, flags...)...)
	if strings.Contains(noNS, "namespace:") {
		t.Errorf("printed a namespace without --namespace:\n%s", noNS)
	}
}

// TestBadInputFailsBeforeAnyRequest: each mistake fails with exit code 2 and a message naming it, and
// no request reaches the server; the control, a valid apply, does reach it.
func TestBadInputFailsBeforeAnyRequest(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "counting server", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, kc, &rest.Config{Host: srv.URL}, "")

	ok := []string{"--kubeconfig", kc, "-n", "ns", "--name", "web", "--image", "web:1", "--target-device", "pi-1"}
	with := func(extra ...string) []string {
		out := append([]string{"apply"}, ok...)
		for i := 0; i < len(extra); i += 2 {
			if extra[i+1] == "" { // a bool flag
				out = append(out, extra[i])
				continue
			}
			replaced := false
			for j := 1; j < len(out)-1; j++ {
				if out[j] == extra[i] {
					out[j+1], replaced = extra[i+1], true
				}
			}
			if !replaced {
				out = append(out, extra[i], extra[i+1])
			}
		}
		return out
	}
	without := func(flag string) []string {
		out := []string{"apply"}
		for i := 0; i < len(ok); i += 2 {
			if ok[i] != flag {
				out = append(out, ok[i], ok[i+1])
			}
		}
		return out
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"name with a dot", with("--name", "web.v2"), `--name "web.v2" is not a valid Deployment name`},
		{"name with capitals", with("--name", "Web"), `--name "Web" is not a valid Deployment name`},
		{"name too long", with("--name", strings.Repeat("a", 64)), "is not a valid Deployment name"},
		{"no name", without("--name"), "--name is required"},
		{"bad namespace", with("-n", "Team_A"), `--namespace "Team_A" is not a valid namespace`},
		{"no image", without("--image"), "--image is required"},
		{"image with a space", with("--image", "web :1"), "without whitespace"},
		{"no target", without("--target-device"), "no target: give --target-device"},
		{"port out of range", with("--port", "8080:70000"), "the container port 70000 is out of range 1-65535"},
		{"host port zero", with("--port", "0:80"), "the host port 0 is out of range"},
		{"port not a number", with("--port", "http"), `"http" is not a number`},
		{"port protocol", with("--port", "80/sctp"), "the protocol must be tcp or udp"},
		{"bad device ID", with("--target-device", "pi.7"), "--target-device: device ID"},
		{"bad selector", with("--selector", "site in lyon"), "--selector"},
		{"all devices and a device", with("--all-devices", ""), "--all-devices does not go with"},
		{"device and selector disagree", with("--selector", "device=pi-2"), "select no device together"},
		{"bad env", with("--env", "1X=y"), `--env "1X=y" is not NAME=VALUE`},
		{"env twice", append(with("--env", "A=1"), "--env", "A=2"), "--env A is given twice"},
		{"bad service", with("--service", "Front_End"), `--service "Front_End" is not a DNS label`},
		{"bad restart", with("--restart", "always"), "--restart must be Always, OnFailure or Never"},
		{"print and delete", with("--print", "", "--delete", ""), "--delete and --print do not go together"},
		{"delete bad name", []string{"delete", "--kubeconfig", kc, "--name", "a.b"}, "is not a valid Deployment name"},
		{"delete no name", []string{"delete", "--kubeconfig", kc}, "--name is required"},
		{"get bad output", []string{"get", "--kubeconfig", kc, "-o", "wide"}, "-o must be text, yaml or json"},
		{"positional argument", append(with(), "extra"), `unexpected argument "extra"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := kubectl(tc.args...)
			if code != exitUsage || !strings.Contains(errs, tc.want) {
				t.Errorf("fleetctl %v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errs, tc.want)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("bad input sent %d requests", n)
	}
	// Control: the valid command does reach the (counting) server, and fails as a request, not a usage
	// mistake.
	if _, errs, code := kubectl(with()...); code != exitError || requests.Load() == 0 {
		t.Errorf("the valid apply: exit %d (%q), %d requests", code, errs, requests.Load())
	}
}
