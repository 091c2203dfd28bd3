package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// installOptions are fleet-agent install's flags. Every path is the path on the device; --root
// prefixes them all (and useradd's --prefix), so that an image or a test can be set up in a directory.
type installOptions struct {
	root, user, home, shell                   string
	configPath, unitDir, lingerDir, agentPath string
	copyBinary                                bool
	subIDCount                                int64
}

// unitName is the systemd user unit fleet-agent install writes.
const unitName = "fleet-agent.service"

// deviceLabel is the label install gives the device (device=<ID>), which fleetctl apply --target-device
// selects on.
const deviceLabel = "device"

// runInstall is "fleet-agent install": it sets the device up to run the agent as a systemd user service
// of its own user with rootless podman, and is idempotent (a second run changes nothing). Exit codes: 0
// done, 1 a step failed, 2 a mistake on the command line.
func runInstall(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleet-agent install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hostname, _ := os.Hostname()
	af := bindAgentFlags(fs, hostname)
	o := &installOptions{}
	fs.StringVar(&o.root, "root", "/", "Prefix of every path below and of the user database (useradd --prefix): set a device's image or a directory up instead of this machine.")
	fs.StringVar(&o.user, "user", "fleet-agent", "The agent's system user; created (with a group of its name) unless it exists.")
	fs.StringVar(&o.home, "home", "/var/lib/fleet-agent", "The user's home, created with it: rootless podman keeps its images and containers there.")
	fs.StringVar(&o.shell, "shell", "/usr/sbin/nologin", "The user's shell.")
	fs.StringVar(&o.configPath, "config-file", "/etc/fleet-agent/agent.conf", "The agent's configuration file (root-owned, readable by the user's group).")
	fs.StringVar(&o.unitDir, "unit-dir", "/etc/systemd/user", "Where the systemd user unit "+unitName+" goes; it is enabled for the user's manager only (ConditionUser).")
	fs.StringVar(&o.lingerDir, "linger-dir", "/var/lib/systemd/linger", "systemd-logind's linger directory: a file named after the user there starts the user's manager at boot.")
	fs.StringVar(&o.agentPath, "agent-path", "/usr/local/bin/fleet-agent", "Where the agent's binary is, as the unit runs it.")
	fs.BoolVar(&o.copyBinary, "copy-binary", true, "Copy this binary to --agent-path (when it differs).")
	fs.Int64Var(&o.subIDCount, "subid-count", 65536, "How many subordinate user and group IDs the user gets (/etc/subuid, /etc/subgid), for rootless podman's user namespace.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		_, _ = fmt.Fprintf(stderr, "fleet-agent install: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	conf, err := o.check(fs, af, given)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "fleet-agent install: %v\n", err)
		return 2
	}
	if err := o.install(conf, stdout); err != nil {
		_, _ = fmt.Fprintf(stderr, "fleet-agent install: %v\n", err)
		return 1
	}
	return 0
}

// check validates the flags before anything is written and returns the configuration file's content.
func (o *installOptions) check(fs *flag.FlagSet, af *agentFlags, given map[string]bool) ([]byte, error) {
	if !filepath.IsAbs(o.root) {
		return nil, fmt.Errorf("--root %q is not an absolute path", o.root)
	}
	for name, p := range map[string]string{"home": o.home, "shell": o.shell, "config-file": o.configPath, "unit-dir": o.unitDir, "linger-dir": o.lingerDir, "agent-path": o.agentPath} {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("--%s %q is not an absolute path", name, p)
		}
		if strings.ContainsAny(p, " \t\n\"'\\%$") {
			return nil, fmt.Errorf("--%s %q: a path of the unit must not need quoting", name, p)
		}
	}
	if errs := validation.IsDNS1123Label(o.user); len(errs) > 0 || len(o.user) > 32 {
		return nil, fmt.Errorf("--user %q must be a lowercase name of at most 32 letters, digits and '-'", o.user)
	}
	if o.subIDCount < 65536 {
		return nil, fmt.Errorf("--subid-count %d: rootless podman needs at least 65536", o.subIDCount)
	}
	if err := fleet.ValidDeviceID(*af.id); err != nil {
		return nil, fmt.Errorf("--device-id: %w", err)
	}
	labels, err := parseLabels(*af.labels)
	if err != nil {
		return nil, fmt.Errorf("--labels: %w", err)
	}
	for k, v := range labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("--labels: key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("--labels: %s=%q: %s", k, v, strings.Join(errs, "; "))
		}
	}
	// The device label makes the device targetable by ID (fleetctl apply --target-device).
	if v, ok := labels[deviceLabel]; ok && v != *af.id {
		return nil, fmt.Errorf("--labels %s=%s is not --device-id %s: the %s label is the device's ID", deviceLabel, v, *af.id, deviceLabel)
	}
	if len(validation.IsValidLabelValue(*af.id)) == 0 {
		labels[deviceLabel] = *af.id
	}
	if *af.caFile != "" || *af.certFile != "" || *af.keyFile != "" || *af.creds != "" {
		for name, p := range map[string]string{"nats-credentials-file": *af.creds, "nats-ca-file": *af.caFile, "nats-cert-file": *af.certFile, "nats-key-file": *af.keyFile} {
			if p != "" && !filepath.IsAbs(p) {
				return nil, fmt.Errorf("--%s %q is not an absolute path (the agent runs from its home)", name, p)
			}
		}
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, k+"="+labels[k])
	}

	var b bytes.Buffer
	b.WriteString("# The IoT fleet agent's configuration, written by `fleet-agent install` (docs/iot.md, \"Device setup\").\n")
	b.WriteString("# One setting a line: a flag of fleet-agent without its dashes, '=', the value; flags on the command line win.\n")
	// Every agent flag the command line gave, in the flag set's (sorted) order; device-id and labels always.
	fs.VisitAll(func(f *flag.Flag) {
		if !isAgentFlag(f.Name) {
			return
		}
		switch {
		case f.Name == "device-id":
			fmt.Fprintf(&b, "device-id=%s\n", *af.id)
		case f.Name == "labels":
			fmt.Fprintf(&b, "labels=%s\n", strings.Join(pairs, ","))
		case f.Name == "podman-ulimit":
			for _, u := range af.rt.Ulimits {
				fmt.Fprintf(&b, "podman-ulimit=%s\n", u)
			}
		case given[f.Name]:
			fmt.Fprintf(&b, "%s=%s\n", f.Name, f.Value.String())
		}
	})
	return b.Bytes(), nil
}

// isAgentFlag says whether name is one of the agent's own flags (and so a setting of its file).
func isAgentFlag(name string) bool {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	bindAgentFlags(fs, "")
	return fs.Lookup(name) != nil
}

// path is a device path under --root.
func (o *installOptions) path(p string) string { return filepath.Join(o.root, p) }

func (o *installOptions) install(conf []byte, out io.Writer) error {
	say := func(format string, a ...any) { _, _ = fmt.Fprintf(out, format+"\n", a...) }

	// 1. The user, a system user with a group of its name and a home for podman's storage.
	u, err := lookupUser(o.path("/etc/passwd"), o.user)
	if err != nil {
		return err
	}
	if u == nil {
		args := []string{"--system", "--create-home", "--home-dir", o.home, "--shell", o.shell, "--user-group", "--comment", "IoT fleet agent", o.user}
		if o.root != "/" {
			args = append([]string{"--prefix", o.root}, args...)
		}
		if b, err := exec.Command("useradd", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("useradd %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(b)))
		}
		if u, err = lookupUser(o.path("/etc/passwd"), o.user); err != nil {
			return err
		}
		if u == nil {
			return fmt.Errorf("useradd created no user %s in %s", o.user, o.path("/etc/passwd"))
		}
		say("user %s: created (uid %d, gid %d, home %s)", o.user, u.uid, u.gid, u.home)
	} else {
		say("user %s: exists (uid %d, gid %d, home %s)", o.user, u.uid, u.gid, u.home)
	}

	// 2. Subordinate IDs: rootless podman maps a container's users into them.
	defs := readLoginDefs(o.path("/etc/login.defs"))
	for _, f := range []struct{ file, min, max string }{{"/etc/subuid", "SUB_UID_MIN", "SUB_UID_MAX"}, {"/etc/subgid", "SUB_GID_MIN", "SUB_GID_MAX"}} {
		line, added, err := ensureSubIDs(o.path(f.file), o.user, u.uid, o.subIDCount, defs.get(f.min, 100000), defs.get(f.max, 600100000))
		if err != nil {
			return err
		}
		if added {
			say("%s: added %s", f.file, line)
		} else {
			say("%s: kept %s", f.file, line)
		}
	}

	// 3. Linger: the user's systemd manager runs from boot, without a login, and runs the unit.
	if err := o.linger(say); err != nil {
		return err
	}

	// 4. The binary, the configuration and the unit.
	if o.copyBinary {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(self)
		if err != nil {
			return err
		}
		if err := writeFile(o.path(o.agentPath), data, 0o755, -1, say); err != nil {
			return err
		}
	}
	if err := writeFile(o.path(o.configPath), conf, 0o640, u.gid, say); err != nil {
		return err
	}
	unitPath := filepath.Join(o.unitDir, unitName)
	if err := writeFile(o.path(unitPath), o.unit(), 0o644, -1, say); err != nil {
		return err
	}
	// Enabled for default.target of the user managers, as `systemctl --global enable` links it;
	// ConditionUser keeps it to the agent's user.
	link := o.path(filepath.Join(o.unitDir, "default.target.wants", unitName))
	if target, err := os.Readlink(link); err == nil && target == unitPath {
		say("%s: unchanged", link)
	} else {
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return err
		}
		_ = os.Remove(link)
		if err := os.Symlink(unitPath, link); err != nil {
			return err
		}
		say("%s: linked to %s", link, unitPath)
	}
	say("next: put the device's credentials where the configuration says, readable by %s; the unit starts at boot, or now with `systemctl --user -M %s@ start %s`", o.user, o.user, unitName)
	return nil
}

// unit is the systemd user unit.
func (o *installOptions) unit() []byte {
	return []byte(`# The IoT fleet agent, written by ` + "`fleet-agent install`" + ` (docs/iot.md, "Device setup").
# A user unit: the manager of user ` + o.user + ` (started at boot by linger) runs it, so podman runs
# rootless as that user, with the user's subordinate IDs and XDG_RUNTIME_DIR.
[Unit]
Description=IoT fleet agent
ConditionUser=` + o.user + `

[Service]
ExecStart=` + o.agentPath + ` --config=` + o.configPath + `
Restart=always
RestartSec=5s

[Install]
WantedBy=default.target
`)
}

// linger enables linger: loginctl enable-linger when systemd runs here, else the file it would write.
func (o *installOptions) linger(say func(string, ...any)) error {
	file := o.path(filepath.Join(o.lingerDir, o.user))
	if _, err := os.Stat(file); err == nil {
		say("linger %s: already enabled (%s)", o.user, file)
		return nil
	}
	if o.root == "/" && o.lingerDir == "/var/lib/systemd/linger" {
		if _, err := os.Stat("/run/systemd/system"); err == nil {
			if b, err := exec.Command("loginctl", "enable-linger", o.user).CombinedOutput(); err != nil {
				return fmt.Errorf("loginctl enable-linger %s: %w: %s", o.user, err, strings.TrimSpace(string(b)))
			}
			say("linger %s: enabled with loginctl enable-linger", o.user)
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		return err
	}
	say("linger %s: wrote %s, what loginctl enable-linger writes (systemd is not running here, or --root/--linger-dir is set): systemd-logind starts the user's manager at its next start", o.user, file)
	return nil
}

// writeFile writes data to path (0 mode, owned by root, group gid unless -1) when its content or mode
// differs, through a temporary file renamed over it.
func writeFile(path string, data []byte, mode os.FileMode, gid int, say func(string, ...any)) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() == mode {
			say("%s: unchanged", path)
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	if gid >= 0 {
		if err := os.Chown(tmp.Name(), 0, gid); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	say("%s: written", path)
	return nil
}

// passwdUser is a user of an /etc/passwd file.
type passwdUser struct {
	uid, gid int
	home     string
}

// lookupUser reads the user from the passwd file (nil when it has none).
func lookupUser(path, name string) (*passwdUser, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 7 || f[0] != name {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s: user %s: %w", path, name, err)
		}
		return &passwdUser{uid: uid, gid: gid, home: f[5]}, nil
	}
	return nil, sc.Err()
}

type loginDefs map[string]string

func readLoginDefs(path string) loginDefs {
	defs := loginDefs{}
	data, err := os.ReadFile(path)
	if err != nil {
		return defs
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && !strings.HasPrefix(f[0], "#") {
			defs[f[0]] = f[1]
		}
	}
	return defs
}

func (d loginDefs) get(key string, def int64) int64 {
	if n, err := strconv.ParseInt(d[key], 10, 64); err == nil {
		return n
	}
	return def
}

// subIDRange is one line of /etc/subuid or /etc/subgid: owner:start:count.
type subIDRange struct {
	owner        string
	start, count int64
}

// ensureSubIDs gives the user (by name or uid) count subordinate IDs in the file, unless its lines give
// it that many already: a new range of count IDs, the lowest from min that overlaps no line of the file
// (whoever's), ending at max at the latest, appended as user:start:count. Every other line is kept as
// it is. It returns the user's line (the added one, or the first already there) and whether it added.
func ensureSubIDs(path, user string, uid int, count, minID, maxID int64) (string, bool, error) {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return "", false, err
	}
	var ranges []subIDRange
	var have int64
	first := ""
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(strings.TrimSpace(line), ":")
		if len(f) != 3 {
			continue
		}
		start, err1 := strconv.ParseInt(f[1], 10, 64)
		n, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || n <= 0 {
			continue
		}
		ranges = append(ranges, subIDRange{f[0], start, n})
		if f[0] == user || f[0] == strconv.Itoa(uid) {
			have += n
			if first == "" {
				first = strings.TrimSpace(line)
			}
		}
	}
	if have >= count {
		return first, false, nil
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].start < ranges[j].start })
	start := minID
	for _, r := range ranges {
		if start+count <= r.start {
			break
		}
		start = max(start, r.start+r.count)
	}
	if start+count-1 > maxID {
		return "", false, fmt.Errorf("%s: no free range of %d IDs between %d and %d", path, count, minID, maxID)
	}
	line := fmt.Sprintf("%s:%d:%d", user, start, count)
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	data = append(data, line+"\n"...)
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := writeFile(path, data, mode, -1, func(string, ...any) {}); err != nil {
		return "", false, err
	}
	return line, true, nil
}
