package ergo

import (
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

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
	// A newer image upgrades the datastore's schema only when the user asked for it.
	c.Datastore.AutoUpgrade = n.Spec.Storage.AutoUpgrade
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
		LockFile: lockFilePath,
		// autoupgrade is off unless spec.storage.autoUpgrade asks (BuildConfig): a schema upgrade cannot
		// be undone by going back to the older image.
		Datastore: DatastoreConfig{Path: datastorePath, AutoUpgrade: false},
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
