package v1alpha1

// Condition types of the backup kinds besides Ready.
const (
	// ConditionStore is True when the referenced BackupStore exists and is Ready.
	ConditionStore = "Store"
	// ConditionSource is True when the source object exists, is of a kind that can be backed up and is
	// ready to be read.
	ConditionSource = "Source"
	// ConditionVerified is True when a restore drill restored the backup into a scratch target and found
	// what the backup recorded; False when a drill failed; absent while no drill ran (unverified).
	ConditionVerified = "Verified"
)

// Reasons of the backup kinds' conditions. The store's refusals are named apart so that an alert or a
// person can tell a wrong secret from a missing bucket without reading a message.
const (
	// ReasonInvalid is a spec the operator refuses (an endpoint with credentials in it, a bad CA bundle).
	ReasonInvalid = "Invalid"
	// ReasonSecretMissing is a credentials Secret or CA ConfigMap, or a key of either, that does not exist
	// (or is empty).
	ReasonSecretMissing = "SecretMissing"
	// ReasonCredentialsRefused is a store that refuses the access key or secret.
	ReasonCredentialsRefused = "CredentialsRefused"
	// ReasonBucketMissing is a bucket that does not exist (the operator never creates buckets).
	ReasonBucketMissing = "BucketMissing"
	// ReasonStoreUnreachable is a store that does not answer; the operator retries with back-off.
	ReasonStoreUnreachable = "StoreUnreachable"
	// ReasonPrefixConflict is a BackupStore whose bucket and prefix would put this namespace's backups
	// inside the tree of another namespace's, or another namespace's inside its own.
	ReasonPrefixConflict = "PrefixConflict"
	// ReasonReachable is a store that answered with the credentials and bucket given.
	ReasonReachable = "Reachable"
	// ReasonSourceMissing is a source object that does not exist.
	ReasonSourceMissing = "SourceMissing"
	// ReasonSourceNotReady is a source object that exists but has nothing to back up yet.
	ReasonSourceNotReady = "SourceNotReady"
	// ReasonStoreNotReady is a referenced BackupStore that is missing or not Ready.
	ReasonStoreNotReady = "StoreNotReady"
	// ReasonJobFailed is a backup or drill Job that failed; the message holds the program's last words.
	ReasonJobFailed = "JobFailed"
	// ReasonChecksumMismatch is an artifact whose bytes no longer match the SHA-256 its manifest recorded.
	ReasonChecksumMismatch = "ChecksumMismatch"
	// ReasonContentMismatch is a drill whose restored copy differs from what the backup recorded (a
	// table's row count, the datastore's account or channel count).
	ReasonContentMismatch = "ContentMismatch"
	// ReasonCompleted is a backup whose artifact is complete in the store.
	ReasonCompleted = "Completed"
	// ReasonRestored is a drill that restored the backup and found what it recorded.
	ReasonRestored = "Restored"
	// ReasonDrilling is a drill in progress (Verified Unknown): its scratch database is being made, or its
	// Job runs.
	ReasonDrilling = "Drilling"
	// ReasonScratchNotReady is a drill whose scratch PostgresDatabase was not Ready in time, or could not
	// be made on the source's server (the source is gone).
	ReasonScratchNotReady = "ScratchNotReady"
)

// Labels the operator puts on what it makes for backups.
const (
	// LabelSchedule names the BackupSchedule that made a Backup.
	LabelSchedule = "backup.josie.cloud/schedule"
	// LabelSourceKind and LabelSourceName name a Backup's source object, so backups of one object are one
	// label query away (kubectl get backups -l backup.josie.cloud/source-name=db).
	LabelSourceKind = "backup.josie.cloud/source-kind"
	// LabelSourceName names a Backup's source object.
	LabelSourceName = "backup.josie.cloud/source-name"
	// LabelDrillOf names the Backup whose restore drill a scratch PostgresDatabase and a drill Job serve
	// (kubectl get postgresdatabases -l backup.josie.cloud/drill-of=nightly).
	LabelDrillOf = "backup.josie.cloud/drill-of"
)
