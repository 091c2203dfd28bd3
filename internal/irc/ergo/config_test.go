package ergo

import (
	"fmt"
	"net"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func TestRenderConfigGolden(t *testing.T) {
	tests := []struct {
		name     string
		network  *ircv1.ErgoNetwork
		withOper bool
		golden   string
	}{
		{name: "minimal", network: minimalNetwork(), golden: "minimal.golden.yaml"},
		{name: "reference", network: referenceNetwork(), withOper: true, golden: "reference.golden.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderConfig(BuildConfig(tt.network, tt.withOper))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.golden, got)
			// Rendering is deterministic, or every reconcile would rewrite the ConfigMap and roll the pod.
			again, err := RenderConfig(BuildConfig(tt.network, tt.withOper))
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(got) {
				t.Error("two renders of the same network differ")
			}
		})
	}
}

// parse reads a rendered config the way ergo does, as plain YAML, without going through our structs.
func parse(t *testing.T, rendered []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(rendered, &doc); err != nil {
		t.Fatalf("rendered config does not parse: %v\n%s", err, rendered)
	}
	return doc
}

// lookup follows a path of keys through a parsed document.
func lookup(doc map[string]any, path ...string) (any, bool) {
	var cur any = doc
	for _, key := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[key]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func TestBuildConfigValues(t *testing.T) {
	withName := referenceNetwork()
	noName := referenceNetwork()
	noName.Spec.NetworkName = ""
	autoUpgrade := referenceNetwork()
	autoUpgrade.Spec.Storage.AutoUpgrade = true
	tests := []struct {
		name     string
		network  *ircv1.ErgoNetwork
		withOper bool
		path     string
		want     any
	}{
		{"network name from spec", withName, true, "network.name", "MyNetwork"},
		{"network name defaults to hostname", noName, true, "network.name", "my-network.irc.now"},
		{"server name is the hostname", withName, true, "server.name", "my-network.irc.now"},
		{"tls listener cert", withName, true, "server.listeners.:6697.tls.cert", "/etc/ergo/tls/tls.crt"},
		{"tls listener key", withName, true, "server.listeners.:6697.tls.key", "/etc/ergo/tls/tls.key"},
		{"plaintext listener is empty", withName, true, "server.listeners.:6667", map[string]any{}},
		{"casemapping", withName, true, "server.casemapping", "ascii"},
		{"enforce-utf8", withName, true, "server.enforce-utf8", true},
		// ergo's default is true when the key is missing, so false must be in the document.
		{"lookup-hostnames written out", withName, true, "server.lookup-hostnames", false},
		// ergo refuses to start without a parseable max-sendq.
		{"max-sendq", withName, true, "server.max-sendq", "96k"},
		{"datastore path on the PVC", withName, true, "datastore.path", "/ircd/ircd.db"},
		// Off unless asked for, and written out either way so the rendered config says which.
		{"datastore autoupgrade off by default", withName, true, "datastore.autoupgrade", false},
		{"datastore autoupgrade when asked", autoUpgrade, true, "datastore.autoupgrade", true},
		{"lock file is top level, on the PVC", withName, true, "lock-file", "/ircd/ircd.lock"},
		{"languages off", withName, true, "languages.enabled", false},
		{"log method", withName, true, "logging.0.method", "stderr"},
		{"log level", withName, true, "logging.0.level", "info"},
		{"log types keep raw I/O out", withName, true, "logging.0.type", "* -userinput -useroutput -connect-ip"},
		{"registration on", withName, true, "accounts.registration.enabled", true},
		{"bcrypt cost", withName, true, "accounts.registration.bcrypt-cost", float64(10)},
		{"nick reservation", withName, true, "accounts.nick-reservation.method", "strict"},
		{"channel registration", withName, true, "channels.registration.enabled", true},
		{"history in memory", withName, true, "history.enabled", true},
		{"oper class", withName, true, "opers.admin.class", "server-admin"},
		{"env overrides with oper", withName, true, "allow-environment-overrides", true},
		{"env overrides off without oper", withName, false, "allow-environment-overrides", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rendered, err := RenderConfig(BuildConfig(tt.network, tt.withOper))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := lookupDotted(parse(t, rendered), tt.path)
			if !ok {
				t.Fatalf("%s missing from\n%s", tt.path, rendered)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s = %#v, want %#v", tt.path, got, tt.want)
			}
		})
	}
}

// lookupDotted is lookup with a dotted path; list indexes are numbers and ":port" keys keep their colon.
func lookupDotted(doc map[string]any, path string) (any, bool) {
	var cur any = doc
	for _, key := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[key]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// TestOperCredentials covers the oper from both sides: with credentials the config declares the
// "admin" oper in a class that exists and lets OperPasswordEnv fill in its password; without them
// there is no oper to log into and no environment override at all. In no case does the document carry
// a password.
func TestOperCredentials(t *testing.T) {
	noCreds := referenceNetwork()
	noCreds.Spec.OperCredentials = nil
	tests := []struct {
		name     string
		network  *ircv1.ErgoNetwork
		withOper bool
		wantOper bool
	}{
		{name: "credentials read", network: referenceNetwork(), withOper: true, wantOper: true},
		{name: "credentials not read yet", network: referenceNetwork(), withOper: false},
		{name: "no credentials in spec", network: noCreds, withOper: false},
		{name: "withOper without credentials in spec", network: noCreds, withOper: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rendered, err := RenderConfig(BuildConfig(tt.network, tt.withOper))
			if err != nil {
				t.Fatal(err)
			}
			doc := parse(t, rendered)
			if key, found := findKey(doc, "password"); found {
				t.Errorf("rendered config has a %q key: the hash must only come from the environment", key)
			}
			opers, hasOpers := doc["opers"].(map[string]any)
			overrides, _ := doc["allow-environment-overrides"].(bool)
			if !tt.wantOper {
				if hasOpers && len(opers) > 0 {
					t.Errorf("opers = %v, want none", opers)
				}
				if overrides {
					t.Error("allow-environment-overrides is on without an oper to feed")
				}
				return
			}
			if !overrides {
				t.Error("allow-environment-overrides is off, so ergo would ignore " + OperPasswordEnv)
			}
			// OperPasswordEnv must name opers.admin.password the way ergo maps variables to keys:
			// strip ERGO__, split on __, lower-case, _ becomes -.
			keys := strings.Split(strings.TrimPrefix(OperPasswordEnv, "ERGO__"), "__")
			for i := range keys {
				keys[i] = strings.ReplaceAll(strings.ToLower(keys[i]), "_", "-")
			}
			if want := []string{"opers", OperName, "password"}; !reflect.DeepEqual(keys, want) {
				t.Fatalf("%s maps to %v, want %v", OperPasswordEnv, keys, want)
			}
			// ergo only overwrites the password of an oper the file already declares; an override
			// creating a new entry would leave it without a class.
			oper, ok := lookup(doc, keys[:2]...)
			if !ok {
				t.Fatalf("%s has no %s entry to override", OperPasswordEnv, strings.Join(keys[:2], "."))
			}
			class, _ := oper.(map[string]any)["class"].(string)
			if _, ok := lookup(doc, "oper-classes", class); !ok {
				t.Errorf("oper %s has class %q, which oper-classes does not define", OperName, class)
			}
		})
	}
}

// findKey reports a map key anywhere in a parsed document, case-insensitively.
func findKey(v any, key string) (string, bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if strings.EqualFold(k, key) {
				return k, true
			}
			if found, ok := findKey(e, key); ok {
				return found, true
			}
		}
	case []any:
		for _, e := range t {
			if found, ok := findKey(e, key); ok {
				return found, true
			}
		}
	}
	return "", false
}

// TestErgoStartupChecks repeats the checks ergo's LoadConfig (irc/config.go) makes before it starts, on
// the parsed document, so a config ergo would refuse fails here first. The checks follow irc/config.go
// at ergo v2.19.1, the default image (read from ergo's source: the Go module proxy does not serve ergo,
// so its LoadConfig cannot run here; docs/ergo-config.md says what changed since v2.14.0).
func TestErgoStartupChecks(t *testing.T) {
	tests := []struct {
		name     string
		network  *ircv1.ErgoNetwork
		withOper bool
	}{
		{name: "minimal", network: minimalNetwork()},
		{name: "reference", network: referenceNetwork(), withOper: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rendered, err := RenderConfig(BuildConfig(tt.network, tt.withOper))
			if err != nil {
				t.Fatal(err)
			}
			for _, problem := range ergoStartupProblems(parse(t, rendered)) {
				t.Error(problem)
			}
		})
	}
}

// TestErgoStartupChecksOfV2191 proves the checks LoadConfig gained between v2.14.0 and v2.19.1 can fail:
// each row breaks the rendered reference config the way one check refuses, and the unchanged document
// (the control, also TestErgoStartupChecks) has no problem.
func TestErgoStartupChecksOfV2191(t *testing.T) {
	rendered, err := RenderConfig(BuildConfig(referenceNetwork(), true))
	if err != nil {
		t.Fatal(err)
	}
	set := func(doc map[string]any, value any, path ...string) {
		for _, k := range path[:len(path)-1] {
			next, ok := doc[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				doc[k] = next
			}
			doc = next
		}
		doc[path[len(path)-1]] = value
	}
	tests := []struct {
		name   string
		change func(map[string]any)
		want   string
	}{
		{"unchanged", func(map[string]any) {}, ""},
		{"bcrypt cost above bcrypt's maximum", func(d map[string]any) { set(d, float64(32), "accounts", "registration", "bcrypt-cost") }, "invalid bcrypt-cost"},
		{"bcrypt cost below bcrypt's minimum", func(d map[string]any) { set(d, float64(3), "accounts", "registration", "bcrypt-cost") }, "invalid bcrypt-cost"},
		{"unknown casemapping", func(d map[string]any) { set(d, "utf8", "server", "casemapping") }, "invalid casemapping"},
		{"ping timeout not below the disconnect timeout", func(d map[string]any) { set(d, "3m", "server", "idle-timeouts", "ping") }, "ping timeout"},
		{"ping timeout below a set disconnect timeout", func(d map[string]any) {
			set(d, "3m", "server", "idle-timeouts", "ping")
			set(d, "4m", "server", "idle-timeouts", "disconnect")
		}, ""},
		{"api without a listener", func(d map[string]any) { set(d, true, "api", "enabled") }, "listener address is empty"},
		{"webpush without always-on", func(d map[string]any) {
			set(d, true, "webpush", "enabled")
			set(d, "disabled", "accounts", "multiclient", "always-on")
		}, "webpush if always-on is disabled"},
		{"webpush with always-on opt-in", func(d map[string]any) { set(d, true, "webpush", "enabled") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := parse(t, rendered)
			tt.change(doc)
			problems := ergoStartupProblems(doc)
			switch {
			case tt.want == "" && len(problems) > 0:
				t.Errorf("problems %q, want none", problems)
			case tt.want != "" && (len(problems) != 1 || !strings.Contains(problems[0], tt.want)):
				t.Errorf("problems %q, want one naming %q", problems, tt.want)
			}
		})
	}
}

var serverNameRE = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)+$`)

func ergoStartupProblems(doc map[string]any) []string {
	var problems []string
	str := func(path ...string) string { v, _ := lookup(doc, path...); s, _ := v.(string); return s }
	num := func(path ...string) float64 { v, _ := lookup(doc, path...); f, _ := v.(float64); return f }
	boolean := func(path ...string) bool { v, _ := lookup(doc, path...); b, _ := v.(bool); return b }

	if str("network", "name") == "" {
		problems = append(problems, "Network name missing")
	}
	if name := str("server", "name"); !serverNameRE.MatchString(name) {
		problems = append(problems, fmt.Sprintf("server name %q must be a hostname with a dot", name))
	}
	if str("datastore", "path") == "" {
		problems = append(problems, "Datastore path missing")
	}
	if num("limits", "nicklen") < 1 || num("limits", "channellen") < 2 || num("limits", "awaylen") < 1 ||
		num("limits", "kicklen") < 1 || num("limits", "topiclen") < 1 {
		problems = append(problems, "One or more limits values are too low")
	}
	for _, k := range []string{"identlen", "realnamelen", "monitor-entries", "whowas-entries", "chan-list-modes", "registration-messages"} {
		if num("limits", k) < 1 {
			problems = append(problems, "limits."+k+" is unset")
		}
	}
	if !regexp.MustCompile(`^[0-9]+[kKmMgG]?$`).MatchString(str("server", "max-sendq")) {
		problems = append(problems, "Could not parse maximum SendQ size")
	}
	if listeners, _ := lookup(doc, "server", "listeners"); len(asMap(listeners)) == 0 {
		problems = append(problems, "No listeners were configured")
	}
	if boolean("accounts", "nick-reservation", "force-nick-equals-account") && !boolean("accounts", "multiclient", "enabled") {
		problems = append(problems, "force-nick-equals-account requires enabling multiclient as well")
	}
	if f := str("accounts", "nick-reservation", "guest-nickname-format"); strings.Count(f, "*") != 1 || strings.Contains(f, "?") {
		problems = append(problems, "guest format must contain 1 '*' and no '?'s")
	}
	if boolean("server", "ip-cloaking", "enabled") &&
		!regexp.MustCompile(`^[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)*$`).MatchString(str("server", "ip-cloaking", "netname")) {
		problems = append(problems, "Invalid netname for cloaked hostnames")
	}
	for _, logger := range asList(doc["logging"]) {
		l := asMap(logger)
		if level, _ := l["level"].(string); !map[string]bool{"debug": true, "info": true, "warn": true, "error": true}[level] {
			problems = append(problems, "Could not translate log level "+level)
		}
		types, _ := l["type"].(string)
		included := false
		for _, typ := range strings.Fields(types) {
			if typ == "-" {
				problems = append(problems, "Encountered logging type '-' with no type to exclude")
			}
			included = included || !strings.HasPrefix(typ, "-")
		}
		if !included {
			problems = append(problems, "Logger has no types to log")
		}
	}
	for _, e := range asList(mustLookup(doc, "server", "ip-limits", "exempted")) {
		if s, _ := e.(string); s != "localhost" {
			if _, _, err := net.ParseCIDR(s); err != nil && net.ParseIP(s) == nil {
				problems = append(problems, "Could not parse limiter exemption list: "+s)
			}
		}
	}
	// Added to LoadConfig between v2.14.0 and v2.19.1.
	if cost := num("accounts", "registration", "bcrypt-cost"); cost != 0 && (cost < 4 || cost > 31) {
		problems = append(problems, fmt.Sprintf("invalid bcrypt-cost %v (require 4 <= cost <= 31)", cost))
	}
	if cm := strings.ToLower(str("server", "casemapping")); cm != "" && !map[string]bool{"ascii": true, "precis": true,
		"rfc7613": true, "rfc8265": true, "permissive": true, "fun": true, "rfc1459": true, "rfc1459-strict": true}[cm] {
		problems = append(problems, "invalid casemapping value: "+cm)
	}
	timeout := func(key string, def time.Duration) time.Duration {
		if d, err := time.ParseDuration(str("server", "idle-timeouts", key)); err == nil && d > 0 {
			return d
		}
		return def
	}
	if ping, disconnect := timeout("ping", 90*time.Second), timeout("disconnect", 150*time.Second); ping >= disconnect {
		problems = append(problems, fmt.Sprintf("ping timeout %v must be strictly less than disconnect timeout %v", ping, disconnect))
	}
	if boolean("api", "enabled") && str("api", "listener") == "" {
		problems = append(problems, "config.api.enabled is true, but listener address is empty")
	}
	if alwaysOn := strings.ToLower(str("accounts", "multiclient", "always-on")); boolean("webpush", "enabled") &&
		(alwaysOn == "" || alwaysOn == "disabled" || alwaysOn == "false") {
		problems = append(problems, "Cannot enable webpush if always-on is disabled")
	}
	// Operator classes: every extends must resolve, every oper's class must exist (OperatorClasses and
	// Operators in config.go).
	classes := asMap(doc["oper-classes"])
	for name, c := range classes {
		if ext, _ := asMap(c)["extends"].(string); ext != "" {
			if _, ok := classes[ext]; !ok {
				problems = append(problems, fmt.Sprintf("Operclass [%s] extends [%s], which doesn't exist", name, ext))
			}
		}
	}
	for name, o := range asMap(doc["opers"]) {
		class, _ := asMap(o)["class"].(string)
		if _, ok := classes[class]; !ok {
			problems = append(problems, fmt.Sprintf("Could not load operator [%s] - they use operclass [%s] which does not exist", name, class))
		}
		// The password is not in the file; it must be able to come from the environment.
		if !boolean("allow-environment-overrides") {
			problems = append(problems, fmt.Sprintf("Oper %s has neither a password nor a fingerprint", name))
		}
	}
	return problems
}

func asMap(v any) map[string]any                        { m, _ := v.(map[string]any); return m }
func asList(v any) []any                                { l, _ := v.([]any); return l }
func mustLookup(doc map[string]any, path ...string) any { v, _ := lookup(doc, path...); return v }

// TestIPLimitExemptions pins the probe/router decision: the addresses kubelet probes and OpenShift
// routers connect from are exempt from ergo's per-IP limits, public client addresses are not.
func TestIPLimitExemptions(t *testing.T) {
	rendered, err := RenderConfig(BuildConfig(referenceNetwork(), true))
	if err != nil {
		t.Fatal(err)
	}
	doc := parse(t, rendered)
	if count, _ := lookup(doc, "server", "ip-limits", "count"); count != true {
		t.Error("ip-limits.count is off: public clients would be unlimited")
	}
	if throttle, _ := lookup(doc, "server", "ip-limits", "throttle"); throttle != true {
		t.Error("ip-limits.throttle is off: public clients would be unthrottled")
	}
	var nets []*net.IPNet
	for _, e := range asList(mustLookup(doc, "server", "ip-limits", "exempted")) {
		s := e.(string)
		if s == "localhost" {
			s = "127.0.0.0/8"
			_, v6, _ := net.ParseCIDR("::1/128")
			nets = append(nets, v6)
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatalf("exempted entry %q: %v", s, err)
		}
		nets = append(nets, n)
	}
	exempt := func(ip string) bool {
		for _, n := range nets {
			if n.Contains(net.ParseIP(ip)) {
				return true
			}
		}
		return false
	}
	tests := []struct {
		ip     string
		source string
		exempt bool
	}{
		{"127.0.0.1", "loopback", true},
		{"::1", "loopback", true},
		{"10.128.2.1", "OpenShift SDN node/router address", true},
		{"10.244.0.1", "kind/flannel node bridge", true},
		{"172.18.0.2", "docker-network node", true},
		{"192.168.49.2", "minikube node", true},
		{"100.64.0.2", "OVN-Kubernetes join switch", true},
		{"fd00:10:244::1", "IPv6 pod network", true},
		{"8.8.8.8", "public IPv4 client", false},
		{"203.0.113.7", "public IPv4 client", false},
		{"2a01:4f8::1", "public IPv6 client", false},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			if got := exempt(tt.ip); got != tt.exempt {
				t.Errorf("%s (%s) exempt = %v, want %v", tt.ip, tt.source, got, tt.exempt)
			}
		})
	}
}

func TestConfigDigest(t *testing.T) {
	base := ConfigDigest([]byte("config"), []byte("$2a$10$hash"), []byte("CERT"))
	tests := []struct {
		name     string
		rendered string
		operHash string
		cert     string
		same     bool
	}{
		{name: "identical inputs", rendered: "config", operHash: "$2a$10$hash", cert: "CERT", same: true},
		{name: "config changes", rendered: "config2", operHash: "$2a$10$hash", cert: "CERT"},
		{name: "oper hash changes", rendered: "config", operHash: "$2a$10$hasH", cert: "CERT"},
		{name: "oper hash removed", rendered: "config", operHash: "", cert: "CERT"},
		{name: "certificate renewed", rendered: "config", operHash: "$2a$10$hash", cert: "CERT2"},
		{name: "bytes move between parts", rendered: "config$", operHash: "2a$10$hash", cert: "CERT"},
		{name: "bytes move into the certificate", rendered: "config", operHash: "$2a$10$has", cert: "hCERT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ConfigDigest([]byte(tt.rendered), []byte(tt.operHash), []byte(tt.cert))
			// The prefix the reconciler keeps instead of the config finishes into the same digest.
			from, err := ConfigDigestFrom(ConfigDigestPrefix([]byte(tt.rendered)), []byte(tt.operHash), []byte(tt.cert))
			if err != nil || from != got {
				t.Errorf("ConfigDigestFrom(ConfigDigestPrefix(...)) = %q, %v; want %q", from, err, got)
			}
			if (got == base) != tt.same {
				t.Errorf("digest %s vs %s: same = %v, want %v", got, base, got == base, tt.same)
			}
			if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(got) {
				t.Errorf("digest %q is not sha256 hex", got)
			}
		})
	}
}

// FuzzRenderConfig builds configs from arbitrary strings where the spec puts user input (hostname,
// network name, listener addresses) and checks the document reads back as exactly the config it came
// from, so no value can escape its quoting and change the document's structure. The seeds run as part
// of go test; go test -fuzz=FuzzRenderConfig explores further.
func FuzzRenderConfig(f *testing.F) {
	f.Add("my-network.irc.now", "MyNetwork", ":6697", ":6667", true, true)
	f.Add("tiny.irc.now", "", ":6667", "", false, false)
	f.Add("a.b", "1e3", "[::]:6697", "0.0.0.0:6667", true, false)
	f.Add("true", "null", "~", "*alias", false, true)
	f.Add("x: y", "- item", "key: {value}", "# comment", true, true)
	f.Add("\"quoted\"", "'single'", "\\backslash", "tab\there", false, false)
	f.Add("line\nbreak", "\r\n", "\u2028", "\ufeffbom", true, false)
	f.Add("<<", "&anchor", "!tag", "%directive", false, true)
	f.Add("@at", "`tick`", "|literal", ">folded", true, true)
	f.Add("yes", "off", "0x1F", "0o17", false, false)
	f.Add("", "", "", "", false, false)
	f.Add("ünïcödé.example", "ネットワーク", "[fe80::1%eth0]:6697", "\x00nul", true, true)
	// Characters a YAML reader refuses raw: DEL, C1 controls, non-characters; and a 4-byte rune.
	f.Add("\x7f", "\u0085next-line", "\u009f", "\uffff\ufffe", false, true)
	f.Add("emoji.\U0001F600", "\u00a0nbsp", ":\u2029", "\t:6667", true, false)
	f.Fuzz(func(t *testing.T, hostname, networkName, addr1, addr2 string, tls1, withOper bool) {
		for _, s := range []string{hostname, networkName, addr1, addr2} {
			// The API server only stores valid UTF-8, and YAML cannot carry anything else.
			if !utf8.ValidString(s) {
				t.Skip()
			}
		}
		n := minimalNetwork()
		n.Spec.Hostname = hostname
		n.Spec.NetworkName = networkName
		n.Spec.Listeners = []ircv1.Listener{{Address: addr1, TLS: tls1}, {Address: addr2}}
		n.Spec.OperCredentials = &ircv1.OperCredentials{SecretName: "oper"}
		want := BuildConfig(n, withOper)

		rendered, err := RenderConfig(want)
		if err != nil {
			t.Fatalf("RenderConfig: %v", err)
		}
		var got Config
		if err := yaml.UnmarshalStrict(rendered, &got); err != nil {
			t.Fatalf("rendered config does not parse: %v\n%s", err, rendered)
		}
		if !reflect.DeepEqual(&got, want) {
			t.Fatalf("rendered config reads back differently\nwant %+v\ngot  %+v\n%s", want, got, rendered)
		}
		// The same again through the untyped parse: user input lands only where it was put.
		doc := parse(t, rendered)
		if v, _ := lookup(doc, "server", "name"); v != hostname {
			t.Errorf("server.name = %#v, want %q", v, hostname)
		}
		if v, _ := lookup(doc, "network", "name"); v != n.Spec.EffectiveNetworkName() {
			t.Errorf("network.name = %#v, want %q", v, n.Spec.EffectiveNetworkName())
		}
		listeners := asMap(mustLookup(doc, "server", "listeners"))
		for _, addr := range []string{addr1, addr2} {
			if _, ok := listeners[addr]; !ok {
				t.Errorf("listener %q missing from %v", addr, listeners)
			}
		}
		if len(doc) != len(topLevelKeys(want)) {
			t.Errorf("top-level keys = %d, want %d:\n%s", len(doc), len(topLevelKeys(want)), rendered)
		}
	})
}

// topLevelKeys are the keys a config renders at the top level.
func topLevelKeys(c *Config) []string {
	keys := []string{"network", "server", "accounts", "channels", "oper-classes", "logging", "lock-file",
		"datastore", "languages", "limits", "fakelag", "history", "allow-environment-overrides"}
	if len(c.Opers) > 0 {
		keys = append(keys, "opers")
	}
	return keys
}

// TestConfigSource: the source names the config exactly (a spec change or the oper moves it, nothing else
// does), and the annotated ConfigMap carries the digest state that finishes into ConfigDigest.
func TestConfigSource(t *testing.T) {
	base := referenceNetwork()
	source := func(n *ircv1.ErgoNetwork, withOper bool) string {
		t.Helper()
		s, err := ConfigSource(BuildConfig(n, withOper))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	renamed := base.DeepCopy()
	renamed.Spec.NetworkName = "Other"
	relabelled := base.DeepCopy()
	relabelled.Labels = map[string]string{"team": "irc"}
	tests := []struct {
		name string
		got  string
		same bool
	}{
		{"the same config", source(base.DeepCopy(), true), true},
		{"a label on the network (not in the config)", source(relabelled, true), true},
		{"another network name", source(renamed, true), false},
		{"without the oper", source(base, false), false},
	}
	want := source(base, true)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.got == want) != tt.same {
				t.Errorf("source %s vs %s: same = %v, want %v", tt.got, want, tt.got == want, tt.same)
			}
		})
	}

	cfg := BuildConfig(base, true)
	rendered, err := RenderConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := SourcedConfigMap(base, cfg, rendered)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Annotations[ConfigSourceAnnotation] != want || cm.Data[ConfigKey] != string(rendered) {
		t.Errorf("ConfigMap annotations %v, data of %d bytes", cm.Annotations, len(cm.Data[ConfigKey]))
	}
	digest, err := ConfigDigestFrom(ConfigStateOf(cm.Annotations), []byte("$2a$10$hash"), []byte("CERT"))
	if err != nil || digest != ConfigDigest(rendered, []byte("$2a$10$hash"), []byte("CERT")) {
		t.Errorf("the ConfigMap's digest state gives %q, %v; want ConfigDigest's", digest, err)
	}
	if ConfigStateOf(map[string]string{ConfigStateAnnotation: "not base64!"}) != nil || ConfigStateOf(nil) != nil {
		t.Error("a missing or invalid state annotation read as a state")
	}
}
