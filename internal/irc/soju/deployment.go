package soju

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ircnet"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// Options are the cluster facts the Deployment depends on.
type Options struct {
	// Image is the soju image; DefaultImage when empty.
	Image string
	// OpenShift is true on OpenShift, whose restricted SCCs assign the uid and gid.
	OpenShift bool
}

const (
	containerName     = "soju"
	initContainerName = "admin-user"

	configVolume = "config"
	tmpVolume    = "tmp"

	// PasswordEnv is where soju's PostgreSQL driver (lib/pq) reads the role's password: the config's
	// connection string leaves it out.
	PasswordEnv = "PGPASSWORD"
	// AdminUserEnv hands the first admin user's name to the init container's script.
	AdminUserEnv = "SOJU_ADMIN_USER"
	// AdminPasswordEnv hands the first admin user's password, from the user's Secret, to the init
	// container's script, which pipes it into sojudb: it never reaches a command line, the ConfigMap or
	// a log.
	AdminPasswordEnv = "SOJU_ADMIN_PASSWORD"

	// sojuUID runs soju off OpenShift: the "nonroot" uid of distroless and Chainguard images. soju reads
	// its config and talks to the network and the database; it writes no file.
	sojuUID int64 = 65532
)

// AdminUserScript makes the first admin user idempotently, before soju starts: it sets the Secret's
// password on the user when the user exists (so the Secret stays the truth), and creates the user as an
// admin otherwise. sojudb reads the password from its standard input, one line; printf is the shell's
// builtin, so the password is in no process's arguments. sojudb opens the database as soju does, running
// soju's schema migrations first on a new database.
const AdminUserScript = `set -eu
if printf '%s\n' "$` + AdminPasswordEnv + `" | sojudb -config ` + configPath + ` change-password "$` + AdminUserEnv + `" 2>/dev/null; then
  echo "soju user $` + AdminUserEnv + ` exists: password set from its Secret"
else
  printf '%s\n' "$` + AdminPasswordEnv + `" | sojudb -config ` + configPath + ` create-user "$` + AdminUserEnv + `" -admin
  echo "soju admin user $` + AdminUserEnv + ` created"
fi
`

// Digest identifies what soju was started with: its config, the database password, the admin user's
// password (set by the init container at start) and the serving certificate (read at start). It goes on
// the pod template, so a change of any of them rolls the pod and nothing else does.
func Digest(rendered []byte, dbPassword, adminPassword string, tlsCert []byte) string {
	return ircnet.Digest(rendered, []byte(dbPassword), []byte(adminPassword), tlsCert)
}

// Deployment runs one soju, after the init container made the first admin user (when the spec asks
// for one). Recreate: two soju processes on one database would both connect every user upstream.
func Deployment(b *ircv1.SojuBouncer, opts Options, digest string) *appsv1.Deployment {
	image := opts.Image
	if image == "" {
		image = DefaultImage
	}
	ports := ircnet.Ports(b.Spec.Listeners)
	cports := ircnet.ContainerPorts(ports)
	if p := metricsContainerPort(b); p != nil {
		cports = append(cports, *p)
	}
	main := corev1.Container{
		Name:            containerName,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"soju", "-config", configPath},
		Ports:           cports,
		Env:             []corev1.EnvVar{passwordEnv(b)},
		VolumeMounts:    mounts(),
		SecurityContext: ircnet.ContainerSecurityContext(),
		Resources:       ircnet.Resources(b.Spec.Resources),
	}
	if port, ok := ircnet.ProbePort(ports); ok {
		main.StartupProbe, main.ReadinessProbe, main.LivenessProbe = ircnet.Probes(port)
	}
	spec := ircnet.PodSpec(opts.OpenShift, sojuUID, []corev1.Container{main}, volumes(b))
	if u := b.Spec.AdminUser; u != nil {
		spec.InitContainers = []corev1.Container{{
			Name:            initContainerName,
			Image:           image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{"/bin/sh", "-c", AdminUserScript},
			Env: []corev1.EnvVar{
				passwordEnv(b),
				{Name: AdminUserEnv, Value: u.Name},
				{Name: AdminPasswordEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: u.PasswordSecret.Name},
					Key:                  AdminPasswordKey(u),
				}}},
			},
			VolumeMounts:    mounts(),
			SecurityContext: ircnet.ContainerSecurityContext(),
			Resources:       ircnet.Resources(b.Spec.Resources),
		}}
	}
	return ChildMeta(b).Deployment(DeploymentName(b), map[string]string{ConfigDigestAnnotation: digest}, spec)
}

// AdminPasswordKey is the key of the admin user's Secret that holds the password.
func AdminPasswordKey(u *ircv1.SojuAdminUser) string {
	if u.PasswordSecret.Key == "" {
		return ircv1.DefaultOperSecretKey
	}
	return u.PasswordSecret.Key
}

// passwordEnv is PGPASSWORD from the bouncer's database Secret.
func passwordEnv(b *ircv1.SojuBouncer) corev1.EnvVar {
	return corev1.EnvVar{Name: PasswordEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: DatabaseSecretName(b)},
		Key:                  postgres.KeyPassword,
	}}}
}

func mounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: configVolume, MountPath: configDir, ReadOnly: true},
		{Name: tmpVolume, MountPath: "/tmp"},
	}
}

// volumes puts the config and the certificate into one projected volume at /etc/soju (config and
// tls/tls.{crt,key}), so no mount sits inside another read-only one, and gives /tmp a bounded scratch
// space.
func volumes(b *ircv1.SojuBouncer) []corev1.Volume {
	tlsSecret := ""
	if b.Spec.TLS != nil {
		tlsSecret = TLSSecretName(b)
	}
	return []corev1.Volume{
		ircnet.ConfigVolume(configVolume, ConfigMapName(b), ConfigKey, tlsSecret),
		ircnet.TmpVolume(tmpVolume),
	}
}
