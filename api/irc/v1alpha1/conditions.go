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

// Condition reasons. They are part of the API: scripts and alerts may match on them.
const (
	ReasonReady              = "Ready"
	ReasonApplied            = "Applied"
	ReasonWaiting            = "Waiting"
	ReasonApplyFailed        = "ApplyFailed"
	ReasonSecretNotFound     = "SecretNotFound"
	ReasonSecretKeyMissing   = "SecretKeyMissing"
	ReasonInvalidHash        = "InvalidPasswordHash"
	ReasonAPINotAvailable    = "APINotAvailable"
	ReasonCertificatePending = "CertificatePending"
	ReasonDeploymentPending  = "DeploymentPending"
	ReasonStorageShrink      = "StorageShrinkRefused"
	ReasonRouteNotAdmitted   = "RouteNotAdmitted"
	ReasonPartsNotReady      = "PartsNotReady"
)

// EffectiveNetworkName is the network name ergo announces: spec.networkName, or the hostname.
func (s *ErgoNetworkSpec) EffectiveNetworkName() string {
	if s.NetworkName != "" {
		return s.NetworkName
	}
	return s.Hostname
}
