package v1alpha1

// Condition types on an ErgoNetwork. Ready sums up the others; each other one reports one managed part.
const (
	// ConditionReady is True when every part is applied, the Deployment is available and the certificate
	// (if any) is ready.
	ConditionReady = "Ready"
	// ConditionOperCredentials reports the oper password hash read from the user's Secret.
	ConditionOperCredentials = "OperCredentialsReady"
	// ConditionStorage reports the PersistentVolumeClaim that holds the datastore.
	ConditionStorage = "StorageReady"
	// ConditionCertificate reports the cert-manager Certificate.
	ConditionCertificate = "CertificateReady"
	// ConditionConfig reports the ConfigMap with the rendered ircd.yaml.
	ConditionConfig = "ConfigReady"
	// ConditionDeployment reports the Deployment running ergo.
	ConditionDeployment = "DeploymentAvailable"
	// ConditionService reports the Service.
	ConditionService = "ServiceReady"
	// ConditionRoute reports the OpenShift Route.
	ConditionRoute = "RouteReady"
)

// Condition reasons. They are part of the API: scripts and alerts may match on them. ReasonApplyFailed,
// ReasonAPINotAvailable and ReasonNameConflict are the shared reconcile kit's reasons: every API of the
// operator uses the same strings.
const (
	// ReasonReady is a part that is ready, and Ready when every part is.
	ReasonReady = "Ready"
	// ReasonApplied is a part whose child is applied and needs nothing more to be ready.
	ReasonApplied = "Applied"
	// ReasonWaiting is a part held until an earlier part is usable (the config until the oper
	// credentials are, the Deployment until the config is rendered).
	ReasonWaiting = "Waiting"
	// ReasonApplyFailed is a part whose child the API server refused or could not take.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonSecretNotFound is an oper Secret that does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretKeyMissing is an oper Secret without the key spec.operCredentials.key names.
	ReasonSecretKeyMissing = "SecretKeyMissing"
	// ReasonInvalidHash is an oper Secret whose value is not a bcrypt hash ergo accepts.
	ReasonInvalidHash = "InvalidPasswordHash"
	// ReasonAPINotAvailable is a part that needs an API the cluster does not serve (cert-manager, Routes).
	ReasonAPINotAvailable = "APINotAvailable"
	// ReasonNameConflict is a part whose child's name is taken by an object the operator did not make,
	// or by one another owner (or an earlier network of the same name) controls; that object is left
	// untouched.
	ReasonNameConflict = "NameConflict"
	// ReasonCertificatePending is a Certificate cert-manager has not issued yet.
	ReasonCertificatePending = "CertificatePending"
	// ReasonDeploymentPending is a Deployment whose pod is not available with the latest spec yet.
	ReasonDeploymentPending = "DeploymentPending"
	// ReasonClaimPending is a datastore claim not bound to a volume yet (with a WaitForFirstConsumer
	// storage class, it binds once ergo's pod is scheduled).
	ReasonClaimPending = "ClaimPending"
	// ReasonClaimLost is a datastore claim whose volume is gone: ergo's accounts and channels are lost
	// with it unless the volume is restored.
	ReasonClaimLost = "ClaimLost"
)

// Event reasons besides the condition reasons and the kit's Created, Updated and Deleted.
const (
	// ReasonStorageShrink is the Warning event of a spec.storage.size below the claim's: volumes cannot
	// shrink, so the claim keeps its size.
	ReasonStorageShrink = "StorageShrinkRefused"
	// ReasonStorageClassImmutable is the Warning event of a spec.storage.storageClassName other than the
	// existing claim's, which cannot change.
	ReasonStorageClassImmutable = "StorageClassImmutable"
	// ReasonClaimAdopted is the Normal event of a network that took up the claim an earlier network of
	// its name kept (reclaimPolicy Retain).
	ReasonClaimAdopted = "ClaimAdopted"
)

// DefaultOperSecretKey is the Secret key the oper hash is read from when spec.operCredentials.key is
// empty (the CRD defaults it to this).
const DefaultOperSecretKey = "password"

// EffectiveNetworkName is the network name ergo announces: spec.networkName, or the hostname.
func (s *ErgoNetworkSpec) EffectiveNetworkName() string {
	if s.NetworkName != "" {
		return s.NetworkName
	}
	return s.Hostname
}
