package catalyst

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

// QuotaName names the ResourceQuota and the LimitRange in an environment's namespace.
const QuotaName = "catalyst"

// DefaultCPU and DefaultMemory are the quota when the Project's is empty (the CRD defaults them too).
// DefaultQuotaStorage is requests.storage when --catalyst-quota-storage says nothing.
var (
	DefaultCPU          = resource.MustParse("1")
	DefaultMemory       = resource.MustParse("2Gi")
	DefaultQuotaStorage = resource.MustParse("20Gi")
)

// Object counts every environment's ResourceQuota allows. They bound what a tenant's manifests can
// pile up in etcd and on the nodes rather than size an application: a preview environment needing more
// is not a preview environment. No Service may be a LoadBalancer or NodePort: environments are reached
// through their Ingress, and those two would put a tenant's pods on an external address or on every
// node's ports.
const (
	QuotaPods                   = 50
	QuotaServices               = 20
	QuotaConfigMaps             = 100
	QuotaSecrets                = 100
	QuotaPersistentVolumeClaims = 10
)

// quotaOf is q with the defaults filled in.
func quotaOf(q catalystv1.Quota) (cpu, memory resource.Quantity) {
	cpu, memory = DefaultCPU, DefaultMemory
	if q.CPU != nil && q.CPU.Sign() > 0 {
		cpu = *q.CPU
	}
	if q.Memory != nil && q.Memory.Sign() > 0 {
		memory = *q.Memory
	}
	return cpu, memory
}

// ResourceQuota is ResourceQuotaFor with quota q and DefaultQuotaStorage.
func ResourceQuota(env *catalystv1.Environment, ns string, q catalystv1.Quota) *corev1.ResourceQuota {
	return ResourceQuotaFor(env, ns, Settings{Quota: q, QuotaStorage: DefaultQuotaStorage})
}

// ResourceQuotaFor caps the namespace's CPU and memory, requests and limits alike, at s.Quota (the
// Project's defaultQuota), the storage its claims request at s.QuotaStorage (the operator's), and the
// objects at the Quota* counts, with no LoadBalancer and no NodePort Service.
func ResourceQuotaFor(env *catalystv1.Environment, ns string, s Settings) *corev1.ResourceQuota {
	cpu, memory := quotaOf(s.Quota)
	storage := s.QuotaStorage
	if storage.Sign() < 0 {
		storage = resource.Quantity{}
	}
	return &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: objectMeta(env, ns, QuotaName),
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceRequestsCPU:            cpu,
			corev1.ResourceLimitsCPU:              cpu,
			corev1.ResourceRequestsMemory:         memory,
			corev1.ResourceLimitsMemory:           memory,
			corev1.ResourceRequestsStorage:        storage,
			corev1.ResourcePersistentVolumeClaims: *resource.NewQuantity(QuotaPersistentVolumeClaims, resource.DecimalSI),
			corev1.ResourcePods:                   *resource.NewQuantity(QuotaPods, resource.DecimalSI),
			corev1.ResourceServices:               *resource.NewQuantity(QuotaServices, resource.DecimalSI),
			corev1.ResourceServicesLoadBalancers:  *resource.NewQuantity(0, resource.DecimalSI),
			corev1.ResourceServicesNodePorts:      *resource.NewQuantity(0, resource.DecimalSI),
			corev1.ResourceConfigMaps:             *resource.NewQuantity(QuotaConfigMaps, resource.DecimalSI),
			corev1.ResourceSecrets:                *resource.NewQuantity(QuotaSecrets, resource.DecimalSI),
		}},
	}
}

// LimitRange gives containers that say nothing a request of a tenth and a limit of a quarter of the
// quota, so that pods without resources still schedule under it (a quota on requests and limits refuses
// pods that set neither) and four of them fit.
func LimitRange(env *catalystv1.Environment, ns string, q catalystv1.Quota) *corev1.LimitRange {
	cpu, memory := quotaOf(q)
	return &corev1.LimitRange{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
		ObjectMeta: objectMeta(env, ns, QuotaName),
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{
				corev1.ResourceCPU:    fractionCPU(cpu, 10),
				corev1.ResourceMemory: fractionMemory(memory, 10),
			},
			Default: corev1.ResourceList{
				corev1.ResourceCPU:    fractionCPU(cpu, 4),
				corev1.ResourceMemory: fractionMemory(memory, 4),
			},
		}}},
	}
}

// fractionCPU is cpu/n in whole millicores, at least 1m.
func fractionCPU(cpu resource.Quantity, n int64) resource.Quantity {
	return *resource.NewMilliQuantity(max(cpu.MilliValue()/n, 1), resource.DecimalSI)
}

// fractionMemory is memory/n rounded down to whole MiB (whole bytes below 1Mi), at least one byte.
func fractionMemory(memory resource.Quantity, n int64) resource.Quantity {
	const mi = 1 << 20
	b := memory.Value() / n
	if b >= mi {
		b = b / mi * mi
	}
	return *resource.NewQuantity(max(b, 1), resource.BinarySI)
}
