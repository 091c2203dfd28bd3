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
func (r *ErgoNetworkReconciler) reconcileOperCredentials(ctx context.Context, s *ergoNetworkScope) (ctrl.Result, error) {
	ref := s.net.Spec.OperCredentials
	if ref == nil {
		s.Drop(ircv1.ConditionOperCredentials)
		return ctrl.Result{}, nil
	}
	key := ref.Key
	if key == "" {
		key = ircv1.DefaultOperSecretKey
	}
	// The messages carry no changing detail, only what to fix: a Warning goes out when reason or message
	// is new (Refuse), so a Secret fixed from one mistake to another is told again and the same mistake
	// found by the next reconcile (any child's event, the resync) is not.
	fail := func(reason, msg string) (ctrl.Result, error) {
		s.operUsable = false
		s.Refuse(ircv1.ConditionOperCredentials, reason, msg)
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
func (r *ErgoNetworkReconciler) reconcileStorage(ctx context.Context, s *ergoNetworkScope) (ctrl.Result, error) {
	desired := ergo.PVC(s.net)
	var live corev1.PersistentVolumeClaim
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), &live)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("read claim: %w", err)
	}
	var notes []claimNote
	adopting := false
	if err == nil {
		notes = keepImmutableClaimFields(desired, &live)
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
	// desired now holds the live claim (see apply.Applier.Apply): a new one is Pending.
	reportClaim(s, desired, notes)
	return ctrl.Result{}, nil
}

// reportClaim sets StorageReady from the live claim and the notes on what it did not take. A spec change
// the claim cannot take is a Warning when the condition that carries it is news: the same refusal found
// again by the next reconcile (any child's event, the resync) is not another one.
func reportClaim(s *ergoNetworkScope, claim *corev1.PersistentVolumeClaim, notes []claimNote) {
	msg := fmt.Sprintf("PersistentVolumeClaim %s requests %s", claim.Name, claim.Spec.Resources.Requests.Storage())
	if s.net.Spec.Storage.ReclaimPolicy == ircv1.ReclaimRetain {
		msg += "; kept when the network is deleted (reclaimPolicy Retain)"
	}
	for _, n := range notes {
		msg += "; " + n.text
	}
	status, reason := claimState(claim.Status.Phase)
	if reason != ircv1.ReasonApplied {
		msg = fmt.Sprintf("PersistentVolumeClaim %s is %s: %s", claim.Name, phaseOrPending(claim.Status.Phase), msg)
	}
	if !reconcile.Said(s.Before, ircv1.ConditionStorage, status, reason, msg) {
		for _, n := range notes {
			if n.warning != "" {
				s.Warn(n.warning, n.text)
			}
		}
	}
	s.Set(ircv1.ConditionStorage, status, reason, msg)
}

// claimNote is a spec change the existing claim does not take (yet), as StorageReady's message tells it;
// warning is the reason of the Warning event it is worth, "" for one that only has to wait.
type claimNote struct {
	text, warning string
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
func keepImmutableClaimFields(desired, live *corev1.PersistentVolumeClaim) []claimNote {
	var notes []claimNote
	if desired.Spec.StorageClassName != nil && live.Spec.StorageClassName != nil &&
		*desired.Spec.StorageClassName != *live.Spec.StorageClassName {
		notes = append(notes, claimNote{warning: ircv1.ReasonStorageClassImmutable,
			text: fmt.Sprintf("spec.storage.storageClassName %q ignored: the claim exists with class %q, which cannot change", *desired.Spec.StorageClassName, *live.Spec.StorageClassName)})
		desired.Spec.StorageClassName = live.Spec.StorageClassName
	}
	want, have := desired.Spec.Resources.Requests.Storage(), live.Spec.Resources.Requests.Storage()
	switch cmp := want.Cmp(*have); {
	case cmp < 0:
		notes = append(notes, claimNote{warning: ircv1.ReasonStorageShrink,
			text: fmt.Sprintf("spec.storage.size %s ignored: the claim already has %s and volumes cannot shrink", want, have)})
		desired.Spec.Resources.Requests[corev1.ResourceStorage] = have.DeepCopy()
	case cmp > 0 && live.Status.Phase != corev1.ClaimBound:
		// Kubernetes only lets a bound claim grow; the claim's binding wakes us up again.
		desired.Spec.Resources.Requests[corev1.ResourceStorage] = have.DeepCopy()
		notes = append(notes, claimNote{text: fmt.Sprintf("spec.storage.size %s is applied once the claim is bound", want)})
	}
	return notes
}

// reconcileCertificate asks cert-manager for the network's certificate.
func (r *ErgoNetworkReconciler) reconcileCertificate(ctx context.Context, s *ergoNetworkScope) (ctrl.Result, error) {
	return applyCertificate(ctx, s.Session, r.Capabilities.CertManager, ergo.Certificate(s.net), ergo.CertificateName(s.net))
}

// reconcileConfig renders ircd.yaml into the network's ConfigMap. Rendering (and reading the YAML back to
// check it) was most of an unchanged network's reconcile, so it happens only when the config may have
// changed. The step tries, cheapest first:
//   - rememberedConfig: while the network's generation holds, what the reconciler applied (configMemo);
//   - annotatedConfig: after a restart, the ConfigMap's annotations, which say which config it holds
//     (ergo.ConfigSource, a digest of the config's JSON form, far cheaper than rendering it) and the config
//     digest's state after it;
//   - renderConfig: render, then leave a ConfigMap from before config sources as it is while it holds the
//     config (legacyConfig), or apply (applyConfig).
//
// The first two trust the ConfigMap only while the applier knows it unchanged since (apply.Applier.Known:
// its own write, or, after a restart, no writer but the operator); any doubt renders and applies.
func (r *ErgoNetworkReconciler) reconcileConfig(ctx context.Context, s *ergoNetworkScope) (ctrl.Result, error) {
	if !s.operUsable {
		s.Set(ircv1.ConditionConfig, metav1.ConditionFalse, ircv1.ReasonWaiting,
			"held until the oper credentials are usable; the running config is kept")
		return ctrl.Result{}, nil
	}
	live, err := r.liveConfigMap(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if prefix, ok := r.rememberedConfig(s, live); ok {
		return configHeld(s, prefix)
	}
	cfg := ergo.BuildConfig(s.net, s.operHash != nil)
	source, err := ergo.ConfigSource(cfg)
	if err != nil {
		return ctrl.Result{}, err
	}
	if prefix, digest, ok := r.annotatedConfig(s, live, source); ok {
		return r.configApplied(s, prefix, digest)
	}
	return r.renderConfig(ctx, s, live, cfg, source)
}

// liveConfigMap is the network's ConfigMap as the cache holds it (slim: its annotations, not its
// ircd.yaml), nil when there is none yet.
func (r *ErgoNetworkReconciler) liveConfigMap(ctx context.Context, s *ergoNetworkScope) (*corev1.ConfigMap, error) {
	live := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.net.Namespace, Name: ergo.ConfigMapName(s.net)}, live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ConfigMap: %w", err)
	}
	live.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	return live, nil
}

// rememberedConfig is the digest state of the config this reconciler applied for the network's current
// generation and oper (configMemo), when the ConfigMap is still the one it applied.
func (r *ErgoNetworkReconciler) rememberedConfig(s *ergoNetworkScope, live *corev1.ConfigMap) ([]byte, bool) {
	m, ok := r.secrets.config(client.ObjectKeyFromObject(s.net))
	if !ok || live == nil || !m.matches(s.net, s.operHash != nil) || !r.applier.Known(s.net, live, m.digest) {
		return nil, false
	}
	return m.prefix, true
}

// annotatedConfig is the digest state and applied digest the ConfigMap's annotations record, when they say
// it holds the config of source and no one but the operator wrote it since.
func (r *ErgoNetworkReconciler) annotatedConfig(s *ergoNetworkScope, live *corev1.ConfigMap, source string) ([]byte, string, bool) {
	if live == nil || live.Annotations[ergo.ConfigSourceAnnotation] != source {
		return nil, "", false
	}
	prefix := ergo.ConfigStateOf(live.Annotations)
	digest := live.Annotations[apply.DigestAnnotation]
	if prefix == nil || !r.applier.Known(s.net, live, digest) {
		return nil, "", false
	}
	return prefix, digest, true
}

// renderConfig renders ircd.yaml from cfg and makes the ConfigMap hold it.
func (r *ErgoNetworkReconciler) renderConfig(ctx context.Context, s *ergoNetworkScope, live *corev1.ConfigMap, cfg *ergo.Config, source string) (ctrl.Result, error) {
	rendered, err := ergo.RenderConfig(cfg)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("render ircd.yaml: %w", err)
	}
	if r.observeRender != nil {
		r.observeRender(client.ObjectKeyFromObject(s.net))
	}
	prefix := ergo.ConfigDigestPrefix(rendered)
	plain := ergo.ConfigMap(s.net, rendered)
	if digest, ok := r.legacyConfig(ctx, s, live, plain); ok {
		return r.configApplied(s, prefix, digest)
	}
	return r.applyConfig(ctx, s, live, ergo.WithConfigSource(plain, source, rendered), prefix)
}

// legacyConfig is the applied digest of a ConfigMap made by a version before config sources, when it holds
// plain as it is (checked as Apply would, without a write): it is left so, so that an upgrade writes
// nothing, and the next config change annotates it. An error here (a conflict) is Apply's to report.
func (r *ErgoNetworkReconciler) legacyConfig(ctx context.Context, s *ergoNetworkScope, live, plain *corev1.ConfigMap) (string, bool) {
	if live == nil || live.Annotations[ergo.ConfigSourceAnnotation] != "" {
		return "", false
	}
	if same, err := r.applier.Holds(ctx, s.net, plain); err != nil || !same {
		return "", false
	}
	return plain.Annotations[apply.DigestAnnotation], true
}

// applyConfig applies desired, the ConfigMap holding the ircd.yaml whose digest state is prefix. A rollout
// is an ircd.yaml other than the one the ConfigMap holds (or a first one) written: the pod template's digest
// follows it, so ergo's pod rolls.
func (r *ErgoNetworkReconciler) applyConfig(ctx context.Context, s *ergoNetworkScope, live, desired *corev1.ConfigMap, prefix []byte) (ctrl.Result, error) {
	rollout := live == nil || !bytes.Equal(ergo.ConfigStateOf(live.Annotations), prefix)
	ok, res, err := s.Apply(ctx, desired, ircv1.ConditionConfig)
	if rollout {
		instruments.ErgoConfigRolledOut(ok)
	}
	if !ok {
		return res, err
	}
	// desired is now the live ConfigMap, carrying the digest applied or verified.
	return r.configApplied(s, prefix, desired.Annotations[apply.DigestAnnotation])
}

// configApplied records that the ConfigMap holds the ircd.yaml whose digest state is prefix, with applied
// digest digest: the Deployment step rolls the pod on it, and the reconciler remembers it for the network's
// generation (rememberedConfig). A legacy ConfigMap that keeps its digest under the old key has none here,
// and is not remembered: the applier could not know it by it.
func (r *ErgoNetworkReconciler) configApplied(s *ergoNetworkScope, prefix []byte, digest string) (ctrl.Result, error) {
	if digest != "" {
		r.secrets.setConfig(client.ObjectKeyFromObject(s.net), configMemo{uid: s.net.UID, generation: s.net.Generation,
			withOper: s.operHash != nil, digest: digest, prefix: prefix})
	}
	return configHeld(s, prefix)
}

// configHeld sets Config: the ConfigMap holds the ircd.yaml whose digest state is prefix.
func configHeld(s *ergoNetworkScope, prefix []byte) (ctrl.Result, error) {
	s.configPrefix = prefix
	s.Set(ircv1.ConditionConfig, metav1.ConditionTrue, ircv1.ReasonApplied,
		fmt.Sprintf("ircd.yaml rendered into ConfigMap %s", ergo.ConfigMapName(s.net)))
	return ctrl.Result{}, nil
}

// reconcileDeployment runs ergo. The pod template carries a digest of the config and oper hash, so a
// change of either rolls the pod and nothing else does. The image is the operator's, except that a network
// running an ergo whose datastore the operator's would refuse keeps its own until it allows the upgrade
// (ergo.ChooseImage, reported in ImageCurrent).
func (r *ErgoNetworkReconciler) reconcileDeployment(ctx context.Context, s *ergoNetworkScope) (ctrl.Result, error) {
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
func (r *ErgoNetworkReconciler) liveDeployment(ctx context.Context, s *ergoNetworkScope) (*appsv1.Deployment, error) {
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
func reportImage(s *ergoNetworkScope, c ergo.ImageChoice) {
	if !c.Held {
		s.Set(ircv1.ConditionImageCurrent, metav1.ConditionTrue, ircv1.ReasonImageCurrent,
			fmt.Sprintf("the Deployment runs the operator's ergo image %s", c.Image))
		return
	}
	s.Fail(ircv1.ConditionImageCurrent, ircv1.ReasonDatastoreUpgradeRequired, fmt.Sprintf(
		"kept on ergo %s (%s): the operator's ergo %s needs datastore schema %d and refuses this datastore's %d "+
			"unless it may upgrade it; set spec.storage.autoUpgrade: true to upgrade (ergo backs ircd.db up first)",
		c.Running, c.Image, c.Target, c.TargetSchema, c.RunningSchema))
}

// podDigest is the config digest the pod template carries: of the rendered config (from its digest
// state), the oper hash and the serving certificate. The certificate is not kept in memory: the digest is
// remembered with the TLS Secret's resourceVersion (podMemo), and the certificate read again (one request)
// only when the config, the oper hash or the Secret changed.
func (r *ErgoNetworkReconciler) podDigest(ctx context.Context, s *ergoNetworkScope) (string, error) {
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
func (r *ErgoNetworkReconciler) servingCertificate(ctx context.Context, s *ergoNetworkScope) ([]byte, error) {
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
func (r *ErgoNetworkReconciler) reconcileService(ctx context.Context, s *ergoNetworkScope) (ctrl.Result, error) {
	if ok, res, err := applyService(ctx, s.Session, ergo.Service(s.net), &s.status.ServiceHost); !ok {
		return res, err
	}
	s.status.Ports = ergo.ServicePorts(s.net)
	return ctrl.Result{}, nil
}

// reconcileRoute exposes the TLS listener outside the cluster through an OpenShift Route.
func (r *ErgoNetworkReconciler) reconcileRoute(ctx context.Context, s *ergoNetworkScope) (ctrl.Result, error) {
	return applyRoute(ctx, s.Session, r.Capabilities.Routes, ergo.Route(s.net), ergo.RouteName(s.net), &s.status.RouteHost)
}
