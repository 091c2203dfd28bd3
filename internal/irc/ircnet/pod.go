package ircnet

import (
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// Digest identifies what a server was started with, from parts such as its rendered config, secrets it
// reads from the environment and its serving certificate. Each part is length-prefixed so bytes cannot
// move between parts unnoticed. On a pod template it rolls the pod when any part changes.
func Digest(parts ...[]byte) string {
	h := sha256.New()
	writeParts(h, parts)
	return hex.EncodeToString(h.Sum(nil))
}

// DigestPrefix is Digest's state after the parts given, a little over 100 bytes however long they are:
// DigestFrom finishes it with the remaining parts, so a caller can keep the state of a large first part
// (a rendered config) instead of the part itself.
func DigestPrefix(parts ...[]byte) []byte {
	h := sha256.New()
	writeParts(h, parts)
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		panic("sha256 state cannot be marshalled: " + err.Error()) // crypto/sha256 always can
	}
	return state
}

// DigestFrom is Digest of the parts DigestPrefix saw followed by rest.
func DigestFrom(prefix []byte, rest ...[]byte) (string, error) {
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(prefix); err != nil {
		return "", fmt.Errorf("digest prefix: %w", err)
	}
	writeParts(h, rest)
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeParts(h hash.Hash, parts [][]byte) {
	for _, part := range parts {
		var size [8]byte
		binary.BigEndian.PutUint64(size[:], uint64(len(part)))
		h.Write(size[:])
		h.Write(part)
	}
}

// PodSecurityContext is the restricted pod security context. Off OpenShift it pins uid, gid and fsGroup
// to uid; OpenShift's restricted SCCs assign them from the namespace's range and reject pods that pin
// their own.
func PodSecurityContext(openShift bool, uid int64) *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if !openShift {
		sc.RunAsUser = ptr.To(uid)
		sc.RunAsGroup = ptr.To(uid)
		sc.FSGroup = ptr.To(uid)
	}
	return sc
}

// ContainerSecurityContext is the restricted container security context: no privilege escalation, no
// capabilities, a read-only root filesystem.
func ContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr.To(true),
	}
}

// Resources are the container's requests and limits from the spec's; none when r is nil.
func Resources(r *ircv1.ResourceRequirements) corev1.ResourceRequirements {
	if r == nil {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Requests: resourceList(r.Requests), Limits: resourceList(r.Limits)}
}

func resourceList(in map[corev1.ResourceName]resource.Quantity) corev1.ResourceList {
	if len(in) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(in))
	for name, q := range in {
		out[name] = q.DeepCopy()
	}
	return out
}

// Probes are plain TCP connects to port, the only check an IRC server allows without a client or an
// authenticated API. The startup probe gives a first start (or a schema upgrade) up to five minutes
// before liveness takes over.
func Probes(port string) (startup, readiness, liveness *corev1.Probe) {
	handler := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(port)}}
	startup = &corev1.Probe{ProbeHandler: handler, PeriodSeconds: 5, TimeoutSeconds: 3, FailureThreshold: 60}
	readiness = &corev1.Probe{ProbeHandler: handler, PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 3}
	liveness = &corev1.Probe{ProbeHandler: handler, PeriodSeconds: 30, TimeoutSeconds: 5, FailureThreshold: 3}
	return startup, readiness, liveness
}
