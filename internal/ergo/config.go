package ergo

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	"sigs.k8s.io/yaml"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// Paths inside the ergo container. The config and the certificate share one read-only projected volume
// (see Deployment), and everything ergo writes lives on the PVC.
const (
	configDir      = "/etc/ergo"
	configPath     = configDir + "/" + ConfigKey
	tlsDir         = configDir + "/tls"
	tlsCertPath    = tlsDir + "/tls.crt"
	tlsKeyPath     = tlsDir + "/tls.key"
	dataDir        = "/ircd"
	datastorePath  = dataDir + "/ircd.db"
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

// ipLimitExemptions are the sources ergo's per-IP limits do not apply to. Inside a cluster the address
// ergo sees is almost never a user's: kubelet probes come from the node, every OpenShift Route user
// arrives from a router's address (passthrough TLS carries no PROXY header), and kube-proxy SNATs
// Service traffic to a node address. Counting those would cap the whole network at 16 concurrent users
// per router and let the probes alone (one connection every few seconds from the node) use up the node's
// 32-per-10-minutes throttle budget. Only private, CGNAT, unique-local and loopback ranges are exempted,
// so a client whose real public address does reach ergo (a LoadBalancer with externalTrafficPolicy:
// Local) is still limited.
var ipLimitExemptions = []string{
	"localhost",
	"10.0.0.0/8",
	"172.16.0.0/12",
	"192.168.0.0/16",
	"100.64.0.0/10",
	"fc00::/7",
}

// BuildConfig returns the ergo config for a network. withOper adds the "admin" oper and turns on
// environment overrides so OperPasswordEnv can supply its hash; it only takes effect when the spec names
// oper credentials, because Deployment only sets OperPasswordEnv then, and an oper without a password
// stops ergo from starting.
func BuildConfig(n *ircv1.ErgoNetwork, withOper bool) *Config {
	c := defaultConfig()
	c.Network.Name = n.Spec.EffectiveNetworkName()
	c.Server.Name = n.Spec.Hostname
	for _, l := range n.Spec.Listeners {
		var lc ListenerConfig
		if l.TLS {
			lc.TLS = &ListenerTLSConfig{Cert: tlsCertPath, Key: tlsKeyPath}
		}
		c.Server.Listeners[l.Address] = lc
	}
	if withOper && n.Spec.OperCredentials != nil {
		c.Opers = map[string]OperConfig{
			OperName: {Class: OperClass, Hidden: true, WhoisLine: operWhoisLine},
		}
		c.AllowEnvironmentOverrides = true
	}
	return c
}

// defaultConfig holds everything that does not depend on the spec. Values are ergo's default.yaml
// recommendations unless a comment says otherwise; docs/ergo-config.md explains each departure.
func defaultConfig() *Config {
	return &Config{
		Server: ServerConfig{
			Listeners:       map[string]ListenerConfig{},
			Casemapping:     "ascii",
			EnforceUTF8:     true,
			LookupHostnames: false,
			CheckIdent:      false,
			CoerceIdent:     "~u",
			Relaymsg:        RelaymsgConfig{Enabled: true, Separators: "/", AvailableToChanops: true},
			MaxSendQ:        "96k",
			Compatibility:   CompatibilityConfig{ForceTrailing: true, SendUnprefixedSASL: true, AllowTruncation: false},
			IPLimits: IPLimitsConfig{
				Count:                    true,
				MaxConcurrentConnections: 16,
				Throttle:                 true,
				Window:                   "10m",
				MaxConnectionsPerWindow:  32,
				CIDRLenIPv4:              32,
				CIDRLenIPv6:              64,
				Exempted:                 append([]string(nil), ipLimitExemptions...),
			},
			// Without cloaking, and with reverse DNS off, users would see each other's addresses,
			// which here are router and node addresses of the cluster.
			IPCloaking: IPCloakingConfig{
				Enabled:            true,
				EnabledForAlwaysOn: true,
				Netname:            defaultNetname,
				CIDRLenIPv4:        32,
				CIDRLenIPv6:        64,
				NumBits:            64,
			},
		},
		Accounts: AccountsConfig{
			AuthenticationEnabled: true,
			Registration: AccountRegistrationConfig{
				Enabled:            true,
				AllowBeforeConnect: true,
				Throttling:         ThrottleConfig{Enabled: true, Duration: "10m", MaxAttempts: 30},
				// default.yaml uses 4, the lowest cost bcrypt allows; 10 (Go's bcrypt default) keeps a
				// copied datastore from giving up weak passwords in seconds, and login-throttling bounds
				// the CPU it costs.
				BcryptCost:    defaultBcrypt,
				VerifyTimeout: "32h",
			},
			LoginThrottling:     ThrottleConfig{Enabled: true, Duration: "1m", MaxAttempts: 3},
			SkipServerPassword:  false,
			LoginViaPassCommand: true,
			AdvertiseSCRAM:      true,
			NickReservation: NickReservationConfig{
				Enabled:                    true,
				AdditionalNickLimit:        0,
				Method:                     "strict",
				AllowCustomEnforcement:     false,
				GuestNicknameFormat:        "Guest-*",
				ForceGuestFormat:           false,
				ForceNickEqualsAccount:     true,
				ForbidAnonymousNickChanges: false,
			},
			// force-nick-equals-account requires multiclient.
			Multiclient: MulticlientConfig{
				Enabled:          true,
				AllowedByDefault: true,
				AlwaysOn:         "opt-in",
				AutoAway:         "opt-in",
			},
			VHosts:           VHostsConfig{Enabled: true, MaxLength: 64},
			DefaultUserModes: "+i",
		},
		Channels: ChannelsConfig{
			DefaultModes:         "+ntC",
			MaxChannelsPerClient: 100,
			OperatorOnlyCreation: false,
			Registration:         ChannelRegistrationConfig{Enabled: true, OperatorOnly: false, MaxChannelsPerAccount: 15},
			ListDelay:            "0s",
			InviteExpiration:     "24h",
		},
		// Both classes are always defined: an oper's class must exist, and chat-moderator must exist
		// for server-admin to extend it.
		OperClasses: map[string]OperClassConfig{
			chatModerator: {
				Title:        "Chat Moderator",
				Capabilities: []string{"kill", "ban", "nofakelag", "relaymsg", "vhosts", "sajoin", "samode", "snomasks", "roleplay"},
			},
			OperClass: {
				Title:        "Server Admin",
				Extends:      chatModerator,
				Capabilities: []string{"rehash", "accreg", "chanreg", "history", "defcon", "massmessage"},
			},
		},
		Logging: []LoggingConfig{{Method: "stderr", Type: loggingTypes, Level: "info"}},
		// The lock file sits next to the datastore so it guards exactly what two ergo processes must
		// never share; Recreate already keeps a second pod away, this catches anything else.
		LockFile:  lockFilePath,
		Datastore: DatastoreConfig{Path: datastorePath, AutoUpgrade: true},
		// The PVC hides the image's /ircd and the translations live under /ircd-bin/languages; English
		// only keeps the config independent of the image layout.
		Languages: LanguagesConfig{Enabled: false},
		Limits: LimitsConfig{
			NickLen:              32,
			IdentLen:             20,
			RealnameLen:          150,
			ChannelLen:           64,
			AwayLen:              390,
			KickLen:              390,
			TopicLen:             390,
			MonitorEntries:       100,
			WhowasEntries:        100,
			ChanListModes:        100,
			RegistrationMessages: 1024,
			Multiline:            MultilineConfig{MaxBytes: 4096, MaxLines: 100},
		},
		Fakelag: FakelagConfig{
			Enabled:           true,
			Window:            "1s",
			BurstLimit:        5,
			MessagesPerWindow: 2,
			Cooldown:          "2s",
			CommandBudgets:    map[string]int{"CHATHISTORY": 16, "MARKREAD": 16, "MONITOR": 1, "WHO": 4},
		},
		// In-memory history: persistent history needs MySQL, which a network does not get.
		History: HistoryConfig{
			Enabled:                true,
			ChannelLength:          2048,
			ClientLength:           256,
			AutoresizeWindow:       "3d",
			AutoreplayOnJoin:       0,
			ChathistoryMaxMessages: 1000,
			ZNCMaxMessages:         2048,
			Restrictions:           HistoryRestrictionsConfig{ExpireTime: "1w", QueryCutoff: "none", GracePeriod: "1h"},
			TagmsgStorage:          TagmsgStorageConfig{Default: false, Whitelist: []string{"+draft/react", "+react"}},
		},
	}
}

// RenderConfig marshals c to YAML. Output is deterministic: struct fields and map keys come out
// sorted. The document is parsed back and compared before it is returned, so a value YAML cannot carry
// unchanged fails here instead of reaching ergo as a different config.
func RenderConfig(c *Config) ([]byte, error) {
	// sigs.k8s.io/yaml goes through JSON; the JSON is escaped first so the YAML reader that turns it
	// into YAML never meets a character it refuses.
	j, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("render ergo config: %w", err)
	}
	out, err := yaml.JSONToYAML(escapeYAMLForbidden(j))
	if err != nil {
		return nil, fmt.Errorf("render ergo config: %w", err)
	}
	var back Config
	if err := yaml.UnmarshalStrict(out, &back); err != nil {
		return nil, fmt.Errorf("render ergo config: rendered YAML does not parse: %w", err)
	}
	if !reflect.DeepEqual(&back, c) {
		return nil, fmt.Errorf("render ergo config: rendered YAML does not read back as the config it was made from")
	}
	return out, nil
}

// escapeYAMLForbidden rewrites, as \uXXXX escapes, the characters encoding/json leaves raw but a YAML
// reader rejects in its input (DEL, the C1 controls, U+FFFE and U+FFFF; JSON already escapes C0
// controls). Outside strings JSON is plain ASCII, so only string contents change, and they decode to
// the same text; the YAML emitter then writes those characters as escapes in double quotes.
func escapeYAMLForbidden(j []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(j))
	for _, r := range string(j) {
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0xfffe || r == 0xffff {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.Bytes()
}

// ConfigDigest identifies what a running ergo was started with: the rendered config, the oper password
// hash (which reaches ergo through an environment variable and so does not change the ConfigMap) and the
// serving certificate (ergo reads it only at start, so a certificate cert-manager renewed must restart
// it). Each part is length-prefixed so bytes cannot move between them unnoticed.
func ConfigDigest(rendered, operHash, tlsCert []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{rendered, operHash, tlsCert} {
		var size [8]byte
		binary.BigEndian.PutUint64(size[:], uint64(len(part)))
		h.Write(size[:])
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}
