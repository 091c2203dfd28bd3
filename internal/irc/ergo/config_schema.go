package ergo

// Paths inside the ergo container. The config and the certificate share one read-only projected volume
// (see Deployment), and everything ergo writes lives on the PVC.
const (
	configDir      = "/etc/ergo"
	configPath     = configDir + "/" + ConfigKey
	tlsDir         = configDir + "/tls"
	tlsCertPath    = tlsDir + "/tls.crt"
	tlsKeyPath     = tlsDir + "/tls.key"
	dataDir        = DataDir
	datastorePath  = dataDir + "/" + DatastoreFile
	lockFilePath   = dataDir + "/ircd.lock"
	operWhoisLine  = "is the server administrator"
	chatModerator  = "chat-moderator"
	loggingTypes   = "* -userinput -useroutput -connect-ip"
	defaultBcrypt  = 10
	defaultNetname = "irc"
)

// Config is the subset of ergo's ircd.yaml the operator sets. Field names follow ergo's irc/config.go
// (yaml tags, or the lower-cased Go field name where ergo has none); every key here was checked against
// ergo's config.go and default.yaml. Keys left out take ergo's built-in default, which for every block
// omitted here (sts, webirc, tor-listeners, email, oauth2, jwt, webpush, metadata, api, mysql) is
// "disabled". The tags are JSON tags because sigs.k8s.io/yaml marshals through encoding/json.
type Config struct {
	Network     NetworkConfig              `json:"network"`
	Server      ServerConfig               `json:"server"`
	Accounts    AccountsConfig             `json:"accounts"`
	Channels    ChannelsConfig             `json:"channels"`
	OperClasses map[string]OperClassConfig `json:"oper-classes"`
	Opers       map[string]OperConfig      `json:"opers,omitempty"`
	Logging     []LoggingConfig            `json:"logging"`
	LockFile    string                     `json:"lock-file"`
	Datastore   DatastoreConfig            `json:"datastore"`
	Languages   LanguagesConfig            `json:"languages"`
	Limits      LimitsConfig               `json:"limits"`
	Fakelag     FakelagConfig              `json:"fakelag"`
	History     HistoryConfig              `json:"history"`
	// AllowEnvironmentOverrides is top level in ergo's Config. It lets ERGO__* variables override keys
	// at start-up; it is only switched on when an oper password has to arrive that way.
	AllowEnvironmentOverrides bool `json:"allow-environment-overrides"`
}

// NetworkConfig is the top-level network block.
type NetworkConfig struct {
	Name string `json:"name"`
}

// ServerConfig is the server block.
type ServerConfig struct {
	Name      string                    `json:"name"`
	Listeners map[string]ListenerConfig `json:"listeners"`
	// Casemapping ascii is ergo's recommended value, and it cannot be changed safely once the network
	// has registered nicks and channels.
	Casemapping string `json:"casemapping"`
	EnforceUTF8 bool   `json:"enforce-utf8"`
	// LookupHostnames is a *bool in ergo that defaults to true, so false must be written out.
	LookupHostnames bool                `json:"lookup-hostnames"`
	CheckIdent      bool                `json:"check-ident"`
	CoerceIdent     string              `json:"coerce-ident,omitempty"`
	Relaymsg        RelaymsgConfig      `json:"relaymsg"`
	MaxSendQ        string              `json:"max-sendq"`
	Compatibility   CompatibilityConfig `json:"compatibility"`
	IPLimits        IPLimitsConfig      `json:"ip-limits"`
	IPCloaking      IPCloakingConfig    `json:"ip-cloaking"`
}

// ListenerConfig is one entry of server.listeners; an empty one is a plaintext listener.
type ListenerConfig struct {
	TLS *ListenerTLSConfig `json:"tls,omitempty"`
}

// ListenerTLSConfig is a listener's single certificate.
type ListenerTLSConfig struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// RelaymsgConfig is server.relaymsg.
type RelaymsgConfig struct {
	Enabled            bool   `json:"enabled"`
	Separators         string `json:"separators"`
	AvailableToChanops bool   `json:"available-to-chanops"`
}

// CompatibilityConfig is server.compatibility.
type CompatibilityConfig struct {
	ForceTrailing      bool `json:"force-trailing"`
	SendUnprefixedSASL bool `json:"send-unprefixed-sasl"`
	AllowTruncation    bool `json:"allow-truncation"`
}

// IPLimitsConfig is server.ip-limits (ergo's connection_limits.LimiterConfig).
type IPLimitsConfig struct {
	Count                    bool     `json:"count"`
	MaxConcurrentConnections int      `json:"max-concurrent-connections"`
	Throttle                 bool     `json:"throttle"`
	Window                   string   `json:"window"`
	MaxConnectionsPerWindow  int      `json:"max-connections-per-window"`
	CIDRLenIPv4              int      `json:"cidr-len-ipv4"`
	CIDRLenIPv6              int      `json:"cidr-len-ipv6"`
	Exempted                 []string `json:"exempted,omitempty"`
}

// IPCloakingConfig is server.ip-cloaking.
type IPCloakingConfig struct {
	Enabled            bool   `json:"enabled"`
	EnabledForAlwaysOn bool   `json:"enabled-for-always-on"`
	Netname            string `json:"netname"`
	CIDRLenIPv4        int    `json:"cidr-len-ipv4"`
	CIDRLenIPv6        int    `json:"cidr-len-ipv6"`
	NumBits            int    `json:"num-bits"`
}

// AccountsConfig is the accounts block.
type AccountsConfig struct {
	AuthenticationEnabled bool                      `json:"authentication-enabled"`
	Registration          AccountRegistrationConfig `json:"registration"`
	LoginThrottling       ThrottleConfig            `json:"login-throttling"`
	SkipServerPassword    bool                      `json:"skip-server-password"`
	LoginViaPassCommand   bool                      `json:"login-via-pass-command"`
	AdvertiseSCRAM        bool                      `json:"advertise-scram"`
	NickReservation       NickReservationConfig     `json:"nick-reservation"`
	Multiclient           MulticlientConfig         `json:"multiclient"`
	VHosts                VHostsConfig              `json:"vhosts"`
	DefaultUserModes      string                    `json:"default-user-modes"`
}

// AccountRegistrationConfig is accounts.registration.
type AccountRegistrationConfig struct {
	Enabled            bool           `json:"enabled"`
	AllowBeforeConnect bool           `json:"allow-before-connect"`
	Throttling         ThrottleConfig `json:"throttling"`
	BcryptCost         int            `json:"bcrypt-cost"`
	VerifyTimeout      string         `json:"verify-timeout"`
}

// ThrottleConfig is ergo's ThrottleConfig (registration and login throttling).
type ThrottleConfig struct {
	Enabled     bool   `json:"enabled"`
	Duration    string `json:"duration"`
	MaxAttempts int    `json:"max-attempts"`
}

// NickReservationConfig is accounts.nick-reservation.
type NickReservationConfig struct {
	Enabled                    bool   `json:"enabled"`
	AdditionalNickLimit        int    `json:"additional-nick-limit"`
	Method                     string `json:"method"`
	AllowCustomEnforcement     bool   `json:"allow-custom-enforcement"`
	GuestNicknameFormat        string `json:"guest-nickname-format"`
	ForceGuestFormat           bool   `json:"force-guest-format"`
	ForceNickEqualsAccount     bool   `json:"force-nick-equals-account"`
	ForbidAnonymousNickChanges bool   `json:"forbid-anonymous-nick-changes"`
}

// MulticlientConfig is accounts.multiclient.
type MulticlientConfig struct {
	Enabled          bool   `json:"enabled"`
	AllowedByDefault bool   `json:"allowed-by-default"`
	AlwaysOn         string `json:"always-on"`
	AutoAway         string `json:"auto-away"`
}

// VHostsConfig is accounts.vhosts.
type VHostsConfig struct {
	Enabled   bool `json:"enabled"`
	MaxLength int  `json:"max-length"`
}

// ChannelsConfig is the channels block.
type ChannelsConfig struct {
	DefaultModes         string                    `json:"default-modes"`
	MaxChannelsPerClient int                       `json:"max-channels-per-client"`
	OperatorOnlyCreation bool                      `json:"operator-only-creation"`
	Registration         ChannelRegistrationConfig `json:"registration"`
	ListDelay            string                    `json:"list-delay"`
	InviteExpiration     string                    `json:"invite-expiration"`
}

// ChannelRegistrationConfig is channels.registration.
type ChannelRegistrationConfig struct {
	Enabled               bool `json:"enabled"`
	OperatorOnly          bool `json:"operator-only"`
	MaxChannelsPerAccount int  `json:"max-channels-per-account"`
}

// OperClassConfig is one entry of oper-classes.
type OperClassConfig struct {
	Title        string   `json:"title"`
	Extends      string   `json:"extends,omitempty"`
	Capabilities []string `json:"capabilities"`
}

// OperConfig is one entry of opers. It has no password field on purpose: the hash reaches ergo only
// through OperPasswordEnv.
type OperConfig struct {
	Class     string `json:"class"`
	Hidden    bool   `json:"hidden"`
	WhoisLine string `json:"whois-line,omitempty"`
}

// LoggingConfig is one entry of logging.
type LoggingConfig struct {
	Method string `json:"method"`
	Type   string `json:"type"`
	Level  string `json:"level"`
}

// DatastoreConfig is the datastore block.
type DatastoreConfig struct {
	Path        string `json:"path"`
	AutoUpgrade bool   `json:"autoupgrade"`
}

// LanguagesConfig is the languages block.
type LanguagesConfig struct {
	Enabled bool `json:"enabled"`
}

// LimitsConfig is the limits block. ergo refuses to start when nicklen, channellen, awaylen, kicklen or
// topiclen is unset, and advertises the rest in ISUPPORT, so all of them are written out.
type LimitsConfig struct {
	NickLen              int             `json:"nicklen"`
	IdentLen             int             `json:"identlen"`
	RealnameLen          int             `json:"realnamelen"`
	ChannelLen           int             `json:"channellen"`
	AwayLen              int             `json:"awaylen"`
	KickLen              int             `json:"kicklen"`
	TopicLen             int             `json:"topiclen"`
	MonitorEntries       int             `json:"monitor-entries"`
	WhowasEntries        int             `json:"whowas-entries"`
	ChanListModes        int             `json:"chan-list-modes"`
	RegistrationMessages int             `json:"registration-messages"`
	Multiline            MultilineConfig `json:"multiline"`
}

// MultilineConfig is limits.multiline.
type MultilineConfig struct {
	MaxBytes int `json:"max-bytes"`
	MaxLines int `json:"max-lines"`
}

// FakelagConfig is the fakelag block.
type FakelagConfig struct {
	Enabled           bool           `json:"enabled"`
	Window            string         `json:"window"`
	BurstLimit        int            `json:"burst-limit"`
	MessagesPerWindow int            `json:"messages-per-window"`
	Cooldown          string         `json:"cooldown"`
	CommandBudgets    map[string]int `json:"command-budgets,omitempty"`
}

// HistoryConfig is the history block.
type HistoryConfig struct {
	Enabled                bool                      `json:"enabled"`
	ChannelLength          int                       `json:"channel-length"`
	ClientLength           int                       `json:"client-length"`
	AutoresizeWindow       string                    `json:"autoresize-window"`
	AutoreplayOnJoin       int                       `json:"autoreplay-on-join"`
	ChathistoryMaxMessages int                       `json:"chathistory-maxmessages"`
	ZNCMaxMessages         int                       `json:"znc-maxmessages"`
	Restrictions           HistoryRestrictionsConfig `json:"restrictions"`
	TagmsgStorage          TagmsgStorageConfig       `json:"tagmsg-storage"`
}

// HistoryRestrictionsConfig is history.restrictions.
type HistoryRestrictionsConfig struct {
	ExpireTime  string `json:"expire-time"`
	QueryCutoff string `json:"query-cutoff"`
	GracePeriod string `json:"grace-period"`
}

// TagmsgStorageConfig is history.tagmsg-storage.
type TagmsgStorageConfig struct {
	Default   bool     `json:"default"`
	Whitelist []string `json:"whitelist,omitempty"`
}
