package datastore

// ergo's key schema (ergo v2.19.1, datastore schema 24; irc/accounts.go, irc/database.go, irc/bunt and
// irc/datastore in ergo's source). Accounts are plain keys named after the casefolded account; since schema
// 23 a channel registration is one key "<table> <uuid>" in the channels table, its value the registration
// as JSON.
const (
	// AccountExistsPrefix starts the key that marks an account: "account.exists <casefolded name>". An
	// account waiting for verification has its keys set with an expiry (accounts.registration.verify-timeout).
	AccountExistsPrefix = "account.exists "
	// ChannelPrefix starts a registered channel's key: the channels table (1, formatted %x) and a space.
	ChannelPrefix = "1 "
	// SchemaVersionKey holds the datastore schema as a decimal string: the metadata table (0) and the UUID
	// ergo reserves for it, AP9VDdQKv3n1mI5ZYY3bVw.
	SchemaVersionKey = "0 AP9VDdQKv3n1mI5ZYY3bVw"
	// SchemaVersion is the schema ergo v2.15.0 to v2.19.1 write and require.
	SchemaVersion = 24
)

// Counts are what a datastore holds, as ergo would load it at a given time.
type Counts struct {
	// Accounts are the accounts without an expiry: registered (and verified where verification is on).
	Accounts int `json:"accounts"`
	// PendingAccounts are accounts whose keys expire: registrations waiting for verification. They may
	// expire between a backup and a drill, so a drill may find fewer, never more.
	PendingAccounts int `json:"pendingAccounts"`
	// Channels are the registered channels.
	Channels int `json:"channels"`
	// Schema is the value of the schema version key, empty when it is absent.
	Schema string `json:"schema"`
}
