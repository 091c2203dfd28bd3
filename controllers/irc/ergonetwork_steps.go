package irc

import (
	"bytes"
	"context"
	"fmt"

	"golang.org/x/crypto/bcrypt"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// reconcileOperCredentials reads the oper password hash from the user's Secret. The Secret is the user's:
// it is read from the API server when its resourceVersion changes (readSecretKey), never changed or
// owned; only the hash is kept, in memory, and it never reaches a log, an event or the status.
func (r *ErgoNetworkReconciler) reconcileOperCredentials(ctx context.Context, s *scope) (ctrl.Result, error) {
	ref := s.net.Spec.OperCredentials
	if ref == nil {
		s.Drop(ircv1.ConditionOperCredentials)
		return ctrl.Result{}, nil
	}
	key := ref.Key
	if key == "" {
		key = ircv1.DefaultOperSecretKey
	}
	fail := func(reason, msg string) (ctrl.Result, error) {
		s.operUsable = false
		s.Set(ircv1.ConditionOperCredentials, metav1.ConditionFalse, reason, msg)
		s.Warn(reason, msg)
		return ctrl.Result{}, nil
	}

	hash, ok, err := r.readSecretKey(ctx, s, operSlot, ref.SecretName, key)
	if apierrors.IsNotFound(err) {
		return fail(ircv1.ReasonSecretNotFound, fmt.Sprintf("Secret %q named by spec.operCredentials.secretName does not exist in namespace %q", ref.SecretName, s.net.Namespace))
	}
	if err != nil {
		s.operUsable = false
		s.Set(ircv1.ConditionOperCredentials, metav1.ConditionUnknown, ircv1.ReasonWaiting, "the oper Secret could not be read: "+err.Error())
		return ctrl.Result{}, fmt.Errorf("read oper secret: %w", err)
	}
	if !ok {
		return fail(ircv1.ReasonSecretKeyMissing, fmt.Sprintf("Secret %q has no key %q", ref.SecretName, key))
	}
	if msg := checkBcryptHash(hash); msg != "" {
		return fail(ircv1.ReasonInvalidHash, fmt.Sprintf("key %q of Secret %q %s", key, ref.SecretName, msg))
	}
	s.operHash = hash
	s.Set(ircv1.ConditionOperCredentials, metav1.ConditionTrue, ircv1.ReasonReady,
		fmt.Sprintf("oper password hash read from key %q of Secret %q", key, ref.SecretName))
	return ctrl.Result{}, nil
}

// checkBcryptHash returns why v is not a bcrypt hash ergo accepts, or "" when it is one. The message
// never quotes the value.
func checkBcryptHash(v []byte) string {
	if len(bytes.TrimSpace(v)) != len(v) {
		return "has leading or trailing whitespace (a newline from echo?); store the hash alone, e.g. with kubectl create secret generic --from-literal"
	}
	if _, err := bcrypt.Cost(v); err != nil {
		return "is not a bcrypt hash; create one with `ergo genpasswd`"
	}
	return ""
}

// reconcileStorage creates the datastore claim once and afterwards only lets it grow: the claim holds
// the user's accounts and history, so a reconcile never shrinks, recreates or deletes it. A claim kept
// from an earlier network of the same name (reclaimPolicy Retain) is taken up again; one an earlier
// network still controls is left alone until the garbage collector has dealt with it (NameConflict).
func (r *ErgoNetworkReconciler) reconcileStorage(ctx context.Context, s *scope) (ctrl.Result, error) {
	desired := ergo.PVC(s.net)
	var live corev1.PersistentVolumeClaim
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), &live)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("read claim: %w", err)
	}
	var notes []string
	adopting := false
	if err == nil {
		notes = keepImmutableClaimFields(s, desired, &live)
		// A claim without a controller that was not kept for this very network was kept for an earlier one.
		adopting = metav1.GetControllerOf(&live) == nil && live.Annotations[ergo.RetainedForAnnotation] != string(s.net.UID)
	}
	if ok, res, err := s.Apply(ctx, desired, ircv1.ConditionStorage); !ok {
		return res, err
	}
	if adopting {
		s.Normalf(ircv1.ReasonClaimAdopted,
			"Took up PersistentVolumeClaim %s, kept from an earlier network of this name: ergo starts on its datastore", desired.Name)
	}
	msg := fmt.Sprintf("PersistentVolumeClaim %s requests %s", desired.Name, desired.Spec.Resources.Requests.Storage())
	if s.net.Spec.Storage.ReclaimPolicy == ircv1.ReclaimRetain {
		msg += "; kept when the network is deleted (reclaimPolicy Retain)"
	}
	for _, n := range notes {
		msg += "; " + n
	}
	// desired now holds the live claim (see apply.Applier.Apply): a new one is Pending.
	status, reason := claimState(desired.Status.Phase)
	if reason != ircv1.ReasonApplied {
		msg = fmt.Sprintf("PersistentVolumeClaim %s is %s: %s", desired.Name, phaseOrPending(desired.Status.Phase), msg)
	}
	s.Set(ircv1.ConditionStorage, status, reason, msg)
	return ctrl.Result{}, nil
}

// claimState is StorageReady's status and reason for a claim in phase: only a bound claim holds ergo's
// datastore. The claim's own status change wakes the reconciler (its watch), so nothing polls.
func claimState(phase corev1.PersistentVolumeClaimPhase) (metav1.ConditionStatus, string) {
	switch phase {
	case corev1.ClaimBound:
		return metav1.ConditionTrue, ircv1.ReasonApplied
	case corev1.ClaimLost:
		return metav1.ConditionFalse, ircv1.ReasonClaimLost
	default:
		return metav1.ConditionFalse, ircv1.ReasonClaimPending
	}
}

func phaseOrPending(p corev1.PersistentVolumeClaimPhase) corev1.PersistentVolumeClaimPhase {
	if p == "" {
		return corev1.ClaimPending
	}
	return p
}

// keepImmutableClaimFields makes desired carry what the existing claim cannot change: its storage class,
// and a size no smaller than it has. It returns notes on spec changes that were not applied.
func keepImmutableClaimFields(s *scope, desired, live *corev1.PersistentVolumeClaim) []string {
	var notes []string
	if desired.Spec.StorageClassName != nil && live.Spec.StorageClassName != nil &&
		*desired.Spec.StorageClassName != *live.Spec.StorageClassName {
		note := fmt.Sprintf("spec.storage.storageClassName %q ignored: the claim exists with class %q, which cannot change", *desired.Spec.StorageClassName, *live.Spec.StorageClassName)
		s.Warn(ircv1.ReasonStorageClassImmutable, note)
		desired.Spec.StorageClassName = live.Spec.StorageClassName
		notes = append(notes, note)
	}
	want, have := desired.Spec.Resources.Requests.Storage(), live.Spec.Resources.Requests.Storage()
	switch cmp := want.Cmp(*have); {
	case cmp < 0:
		note := fmt.Sprintf("spec.storage.size %s ignored: the claim already has %s and volumes cannot shrink", want, have)
		s.Warn(ircv1.ReasonStorageShrink, note)
		desired.Spec.Resources.Requests[corev1.ResourceStorage] = have.DeepCopy()
		notes = append(notes, note)
	case cmp > 0 && live.Status.Phase != corev1.ClaimBound:
		// Kubernetes only lets a bound claim grow; the claim's binding wakes us up again.
		desired.Spec.Resources.Requests[corev1.ResourceStorage] = have.DeepCopy()
		notes = append(notes, fmt.Sprintf("spec.storage.size %s is applied once the claim is bound", want))
	}
	return notes
}

// reconcileCertificate asks cert-manager for the network's certificate.
func (r *ErgoNetworkReconciler) reconcileCertificate(ctx context.Context, s *scope) (ctrl.Result, error) {
	return applyCertificate(ctx, s.Session, r.Capabilities.CertManager, ergo.Certificate(s.net), ergo.CertificateName(s.net))
}

// reconcileConfig renders ircd.yaml into the network's ConfigMap. Rendering (and reading the YAML back to
// check it) was most of an unchanged network's reconcile, so it happens only when the config may have
// changed:
//   - while the network's generation holds, the reconciler remembers what it applied (configMemo);
//   - after a restart, the ConfigMap's annotations say which config it holds (ergo.ConfigSource, a digest
//     of the config's JSON form, far cheaper than rendering it) and the config digest's state after it.
//
// Either way the applier must know the ConfigMap unchanged since (apply.Applier.Known: its own write,
// or, after a restart, no writer but the operator); any doubt renders and applies as before.
func (r *ErgoNetworkReconciler) reconcileConfig(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.operUsable {
		s.Set(ircv1.ConditionConfig, metav1.ConditionFalse, ircv1.ReasonWaiting,
			"held until the oper credentials are usable; the running config is kept")
		return ctrl.Result{}, nil
	}
	withOper := s.operHash != nil
	netKey := client.ObjectKeyFromObject(s.net)
	done := func(prefix []byte, digest string) (ctrl.Result, error) {
		s.configPrefix = prefix
		if digest != "" {
			r.secrets.setConfig(netKey, configMemo{uid: s.net.UID, generation: s.net.Generation, withOper: withOper, digest: digest, prefix: prefix})
		}
		s.Set(ircv1.ConditionConfig, metav1.ConditionTrue, ircv1.ReasonApplied,
			fmt.Sprintf("ircd.yaml rendered into ConfigMap %s", ergo.ConfigMapName(s.net)))
		return ctrl.Result{}, nil
	}

	live := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.net.Namespace, Name: ergo.ConfigMapName(s.net)}, live)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("read ConfigMap: %w", err)
	}
	cached := err == nil
	live.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if m, ok := r.secrets.config(netKey); ok && cached && m.matches(s.net, withOper) && r.applier.Known(s.net, live, m.digest) {
		return done(m.prefix, "")
	}
	cfg := ergo.BuildConfig(s.net, withOper)
	source, err := ergo.ConfigSource(cfg)
	if err != nil {
		return ctrl.Result{}, err
	}
	if prefix := ergo.ConfigStateOf(live.Annotations); cached && prefix != nil && live.Annotations[ergo.ConfigSourceAnnotation] == source {
		if digest := live.Annotations[apply.DigestAnnotation]; r.applier.Known(s.net, live, digest) {
			return done(prefix, digest)
		}
	}

	rendered, err := ergo.RenderConfig(cfg)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("render ircd.yaml: %w", err)
	}
	if r.observeRender != nil {
		r.observeRender(netKey)
	}
	prefix := ergo.ConfigDigestPrefix(rendered)
	plain := ergo.ConfigMap(s.net, rendered)
	if cached && live.Annotations[ergo.ConfigSourceAnnotation] == "" {
		// Made by a version before config sources: left as it is while it holds the config (checked as
		// Apply would, without a write), so that an upgrade writes nothing; the next config change
		// annotates it. An error here (a conflict) is Apply's to report, below.
		if same, err := r.applier.Holds(ctx, s.net, plain); err == nil && same {
			return done(prefix, plain.Annotations[apply.DigestAnnotation])
		}
	}
	desired := ergo.WithConfigSource(plain, source, rendered)
	// A rollout is an ircd.yaml other than the one the ConfigMap holds (or a first one) written: the pod
	// template's digest follows it, so ergo's pod rolls.
	rollout := !cached || !bytes.Equal(ergo.ConfigStateOf(live.Annotations), prefix)
	ok, res, err := s.Apply(ctx, desired, ircv1.ConditionConfig)
	if rollout {
		instruments.ErgoConfigRolledOut(ok)
	}
	if !ok {
		return res, err
	}
	// desired is now the live ConfigMap, carrying the digest applied or verified.
	return done(prefix, desired.Annotations[apply.DigestAnnotation])
}

// reconcileDeployment runs ergo. The pod template carries a digest of the config and oper hash, so a
// change of either rolls the pod and nothing else does. The image is the operator's, except that a network
// running an ergo whose datastore the operator's would refuse keeps its own until it allows the upgrade
// (ergo.ChooseImage, reported in ImageCurrent).
func (r *ErgoNetworkReconciler) reconcileDeployment(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.configPrefix == nil {
		s.Set(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonWaiting,
			"held until the config is rendered; the running Deployment is kept")
		return ctrl.Result{}, nil
	}
	live, err := r.liveDeployment(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if live == nil && ergoRestorePending(s.net) && s.status.RestoredFrom == nil {
		// ergo would start on an empty claim and make a new datastore there, which the restore then
		// refuses to write over: it starts only once the backup is in the claim.
		s.Set(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonWaiting,
			"held until the restore has written the backup's datastore into the claim (Restored)")
		return ctrl.Result{}, nil
	}
	digest, err := r.podDigest(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Moving a digest from the legacy annotation key would roll the pod for nothing: it stays there until
	// the digest changes, which rolls the pod anyway and moves it to its new key.
	legacy := live != nil && live.Spec.Template.Annotations[ergo.LegacyConfigDigestAnnotation] == digest
	image := ergo.ChooseImage(ergo.RunningImage(live), r.Image, s.net.Spec.Storage.AutoUpgrade)
	reportImage(s, image)
	desired := ergo.Deployment(s.net, ergo.Options{Image: image.Image, OpenShift: r.Capabilities.OpenShift, LegacyDigestKey: legacy}, digest)
	if ok, res, err := s.Apply(ctx, desired, ircv1.ConditionDeployment); !ok {
		return res, err
	}
	if ready := reconcile.DeploymentReady(desired); ready.Ready {
		s.Set(ircv1.ConditionDeployment, metav1.ConditionTrue, ircv1.ReasonReady, "the ergo pod is available")
	} else {
		s.Set(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonDeploymentPending, ready.Message)
	}
	return ctrl.Result{}, nil
}

// liveDeployment is the network's Deployment as the cache holds it (slim: its pod template keeps the
// legacy digest annotation and the ergo container's image, nothing else), nil when there is none yet.
func (r *ErgoNetworkReconciler) liveDeployment(ctx context.Context, s *scope) (*appsv1.Deployment, error) {
	var live appsv1.Deployment
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.net.Namespace, Name: ergo.DeploymentName(s.net)}, &live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Deployment: %w", err)
	}
	return &live, nil
}

// reportImage sets ImageCurrent: True when the Deployment gets the operator's image, False while the
// running ergo is kept because the operator's would refuse its datastore (ergo.ChooseImage). The Warning
// event goes out once, when the network comes to be held (Fail compares with the conditions as read), so
// a held network costs no event and no status write on later reconciles. Ready does not read it: a held
// network keeps serving.
func reportImage(s *scope, c ergo.ImageChoice) {
	if !c.Held {
		s.Set(ircv1.ConditionImageCurrent, metav1.ConditionTrue, ircv1.ReasonImageCurrent,
			fmt.Sprintf("the Deployment runs the operator's ergo image %s", c.Image))
		return
	}
	s.Fail(s.net.Status.Conditions, ircv1.ConditionImageCurrent, ircv1.ReasonDatastoreUpgradeRequired, fmt.Sprintf(
		"kept on ergo %s (%s): the operator's ergo %s needs datastore schema %d and refuses this datastore's %d "+
			"unless it may upgrade it; set spec.storage.autoUpgrade: true to upgrade (ergo backs ircd.db up first)",
		c.Running, c.Image, c.Target, c.TargetSchema, c.RunningSchema))
}

// podDigest is the config digest the pod template carries: of the rendered config (from its digest
// state), the oper hash and the serving certificate. The certificate is not kept in memory: the digest is
// remembered with the TLS Secret's resourceVersion (podMemo), and the certificate read again (one request)
// only when the config, the oper hash or the Secret changed.
func (r *ErgoNetworkReconciler) podDigest(ctx context.Context, s *scope) (string, error) {
	if s.net.Spec.TLS == nil {
		return ergo.ConfigDigestFrom(s.configPrefix, s.operHash, nil)
	}
	netKey := client.ObjectKeyFromObject(s.net)
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.net.Namespace, Name: ergo.TLSSecretName(s.net)}, meta)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("read TLS secret: %w", err)
	}
	if m := r.secrets.pod(netKey); m.digest != "" && m.tlsVersion != "" && m.tlsVersion == meta.ResourceVersion &&
		bytes.Equal(m.prefix, s.configPrefix) && bytes.Equal(m.oper, s.operHash) {
		return m.digest, nil
	}
	cert, err := r.servingCertificate(ctx, s)
	if err != nil {
		return "", err
	}
	digest, err := ergo.ConfigDigestFrom(s.configPrefix, s.operHash, cert)
	if err != nil {
		return "", err
	}
	if cert != nil {
		r.secrets.setPod(netKey, podMemo{prefix: s.configPrefix, oper: s.operHash, digest: digest})
	}
	return digest, nil
}

// servingCertificate is the certificate in the network's TLS Secret, nil while cert-manager has not
// issued it. Ergo reads it only at start, so it is part of what rolls the pod: a renewal restarts ergo
// with the new certificate.
func (r *ErgoNetworkReconciler) servingCertificate(ctx context.Context, s *scope) ([]byte, error) {
	if s.net.Spec.TLS == nil {
		return nil, nil
	}
	cert, _, err := r.readSecretKey(ctx, s, tlsSlot, ergo.TLSSecretName(s.net), corev1.TLSCertKey)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read TLS secret: %w", err)
	}
	return cert, nil
}

// reconcileService exposes every listener inside the cluster.
func (r *ErgoNetworkReconciler) reconcileService(ctx context.Context, s *scope) (ctrl.Result, error) {
	if ok, res, err := applyService(ctx, s.Session, ergo.Service(s.net), &s.status.ServiceHost); !ok {
		return res, err
	}
	s.status.Ports = ergo.ServicePorts(s.net)
	return ctrl.Result{}, nil
}

// reconcileRoute exposes the TLS listener outside the cluster through an OpenShift Route.
func (r *ErgoNetworkReconciler) reconcileRoute(ctx context.Context, s *scope) (ctrl.Result, error) {
	return applyRoute(ctx, s.Session, r.Capabilities.Routes, ergo.Route(s.net), ergo.RouteName(s.net), &s.status.RouteHost)
}
