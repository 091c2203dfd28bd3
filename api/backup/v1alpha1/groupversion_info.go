// Package v1alpha1 holds the backup.josie.cloud/v1alpha1 API: BackupStore (where backups go), Backup (one
// backup of one object, taken now) and BackupSchedule (backups on a cron schedule, pruned by retention and
// proven by restore drills). Every kind whose data the operator holds is backed up through it.
// +kubebuilder:object:generate=true
// +groupName=backup.josie.cloud
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "backup.josie.cloud", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
