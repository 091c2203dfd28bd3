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
	// ConditionImageCurrent reports whether an ErgoNetwork's Deployment runs the operator's ergo image. It
	// is not part of Ready: a network held on its running image (ReasonDatastoreUpgradeRequired) serves.
	ConditionImageCurrent = "ImageCurrent"
	// ConditionMetricsMonitor reports a SojuBouncer's PodMonitor (with spec.metrics.enabled). It is not
	// part of Ready: a bouncer serves its users without being scraped.
	ConditionMetricsMonitor = "MetricsMonitorReady"
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
	// ReasonImageCurrent is an ErgoNetwork whose Deployment names the operator's ergo image.
	ReasonImageCurrent = "Current"
	// ReasonDatastoreUpgradeRequired is an ErgoNetwork kept on the ergo release it runs because the
	// operator's image needs a newer datastore schema and spec.storage.autoUpgrade is off: the new image
	// would refuse the datastore and crash-loop.
	ReasonDatastoreUpgradeRequired = "DatastoreUpgradeRequired"
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

// Condition types on a SojuBouncer besides the shared ones above (Ready, CertificateReady, ConfigReady,
// DeploymentAvailable, ServiceReady, RouteReady).
const (
	// ConditionDatabase reports the bouncer's PostgreSQL database, its role and the Secret {name}-db.
	ConditionDatabase = "DatabaseReady"
	// ConditionAdminUser reports the first admin user's password Secret.
	ConditionAdminUser = "AdminUserReady"
	// ConditionCleanup is present only while a deleted bouncer waits for its database to be dropped.
	ConditionCleanup = "CleanupDone"
)

// Condition and event reasons of a SojuBouncer besides the shared ones above.
const (
	// ReasonAdminSecretMissing is a bouncer with no admin connection: spec.database.adminSecretName is
	// empty and the operator has no --soju-database-secret.
	ReasonAdminSecretMissing = "AdminConnectionNotConfigured"
	// ReasonAdminSecretNotAllowed is a bouncer without spec.database.adminSecretName in a namespace that
	// --soju-database-namespaces does not list: the operator-wide admin connection serves only its
	// Secret's namespace and the listed ones.
	ReasonAdminSecretNotAllowed = "AdminConnectionNotAllowed"
	// ReasonAdminSecretInvalid is an admin connection Secret without a required key or with a value that
	// cannot be used.
	ReasonAdminSecretInvalid = "AdminConnectionInvalid"
	// ReasonAuthenticationFailed is a database server that refused the admin login.
	ReasonAuthenticationFailed = "AuthenticationFailed"
	// ReasonUnreachable is a database server that could not be reached.
	ReasonUnreachable = "Unreachable"
	// ReasonInsufficientPrivileges is an admin login without CREATEROLE and CREATEDB.
	ReasonInsufficientPrivileges = "InsufficientPrivileges"
	// ReasonSQLFailed is a statement the database server refused.
	ReasonSQLFailed = "SQLFailed"
	// ReasonDatabaseClaimed is a database or role name on the server that another object, or no object
	// of the operator, owns; it is left untouched.
	ReasonDatabaseClaimed = "DatabaseClaimed"
	// ReasonInvalidPassword is an admin user password that soju cannot take: empty, or more than one line
	// (sojudb reads one line).
	ReasonInvalidPassword = "InvalidPassword"
	// ReasonCleanupBlocked is a deleted bouncer whose database cannot be dropped yet.
	ReasonCleanupBlocked = "CleanupBlocked"
	// ReasonWaitingForDeployment is a deleted bouncer whose database waits for soju's Deployment to go.
	ReasonWaitingForDeployment = "WaitingForDeployment"
	// ReasonDatabaseRetained is the Normal event of a deleted bouncer whose database and role stay
	// (reclaimPolicy Retain).
	ReasonDatabaseRetained = "DatabaseRetained"
	// ReasonDatabaseDropped is the Normal event of a deleted bouncer whose database and role were dropped.
	ReasonDatabaseDropped = "DatabaseDropped"
	// ReasonCleanupAbandoned is the Warning event of a deleted bouncer let go with its database left on the
	// server: by the release annotation, or because the cleanup stayed blocked past the cleanup timeout.
	ReasonCleanupAbandoned = "CleanupAbandoned"
)

// AnnotationReleaseDatabase on a deleted SojuBouncer, set to "true", lets it go at once without dropping
// its database: the escape when the database server is gone for good.
const AnnotationReleaseDatabase = "irc.josie.cloud/release-database"

// SojuDatabaseFinalizer holds a SojuBouncer until its database and role are dropped (or retained).
const SojuDatabaseFinalizer = "irc.josie.cloud/soju-database"
