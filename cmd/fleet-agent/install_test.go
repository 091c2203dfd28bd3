package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The install tests run as root (this machine's tests do): useradd and chown need it. They fail, not
// skip, when they cannot.

// snapshot is every file, directory and link under root: content (a link's target), mode, owner.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		desc := fmt.Sprintf("%v %d:%d", fi.Mode(), st.Uid, st.Gid)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + string(data)
		}
		out[strings.TrimPrefix(p, root)] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func install(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := runInstall(args, &out, &errb); code != 0 {
		t.Fatalf("fleet-agent install %s: exit %d: %s%s", strings.Join(args, " "), code, out.String(), errb.String())
	}
	return out.String()
}

// subIDLines are the file's lines.
func subIDLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
}

// overlap names two lines of a subuid/subgid file whose ranges overlap ("" when none do).
func overlap(lines []string) string {
	type r struct{ start, end int64 }
	var rs []r
	for _, l := range lines {
		f := strings.Split(l, ":")
		if len(f) != 3 {
			continue
		}
		s, _ := strconv.ParseInt(f[1], 10, 64)
		n, _ := strconv.ParseInt(f[2], 10, 64)
		rs = append(rs, r{s, s + n})
	}
	for i := range rs {
		for j := i + 1; j < len(rs); j++ {
			if rs[i].start < rs[j].end && rs[j].start < rs[i].end {
				return lines[i] + " and " + lines[j]
			}
		}
	}
	return ""
}

func TestOverlapFindsOverlaps(t *testing.T) { // the control of the check the install tests rely on
	if overlap([]string{"a:100000:65536", "b:165535:10"}) == "" || overlap([]string{"a:100000:65536", "b:165536:10"}) != "" {
		t.Fatal("overlap is wrong")
	}
}

func TestEnsureSubIDsAllocation(t *testing.T) {
	tests := []struct {
		name, existing, want string
		added                bool
	}{
		{"empty file", "", "agent:100000:65536", true},
		{"after a range at the start", "alice:100000:65536\n", "agent:165536:65536", true},
		{"in a gap big enough", "alice:100000:65536\nbob:300000:65536\n", "agent:165536:65536", true},
		{"not in a gap too small", "alice:100000:65536\nbob:200000:65536\n", "agent:265536:65536", true},
		{"unsorted, by uid, no final newline", "bob:165536:1000\nalice:100000:65536", "agent:166536:65536", true},
		{"already there", "alice:100000:65536\nagent:500000:65536\n", "agent:500000:65536", false},
		{"by uid", "4242:500000:65536\n", "4242:500000:65536", false},
		{"too small a range gets another", "agent:100000:1000\n", "agent:101000:65536", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "subuid")
			if err := os.WriteFile(p, []byte(tt.existing), 0o644); err != nil {
				t.Fatal(err)
			}
			line, added, err := ensureSubIDs(p, "agent", 4242, 65536, 100000, 600100000)
			if err != nil || line != tt.want || added != tt.added {
				t.Fatalf("ensureSubIDs = %q, %v, %v; want %q, %v", line, added, err, tt.want, tt.added)
			}
			lines := subIDLines(t, p)
			if o := overlap(lines); o != "" {
				t.Errorf("overlapping ranges %s in %q", o, lines)
			}
			if !strings.HasPrefix(strings.Join(lines, "\n"), strings.TrimRight(tt.existing, "\n")) {
				t.Errorf("the existing lines changed: %q", lines)
			}
		})
	}
	p := filepath.Join(t.TempDir(), "subuid")
	if err := os.WriteFile(p, []byte("alice:100000:600000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ensureSubIDs(p, "agent", 4242, 65536, 100000, 600100000); err == nil || !strings.Contains(err.Error(), "no free range") {
		t.Errorf("a full file: %v", err)
	}
}

// TestInstallIntoRootIsIdempotent sets a device up in a directory (--root: useradd --prefix and every
// file under it) twice: the second run changes no file at all; the foreign subuid/subgid lines are kept
// and not overlapped; the agent reads the configuration file it wrote.
func TestInstallIntoRootIsIdempotent(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"passwd", "group", "shadow", "gshadow", "login.defs"} {
		data, err := os.ReadFile(filepath.Join("/etc", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "etc", f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	foreignUID := "alice:100000:65536\n1001:165536:1000\nbob:300000:65536" // no final newline
	foreignGID := "alice:100000:65536\n"
	if err := os.WriteFile(filepath.Join(root, "etc/subuid"), []byte(foreignUID), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/subgid"), []byte(foreignGID), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--root", root, "--nats-url", "tls://nats.example.com:4222", "--nats-credentials-file", "/etc/fleet-agent/device.creds",
		"--nats-ca-file", "/etc/fleet-agent/ca.pem", "--device-id", "pi-7", "--labels", "site=lyon,tier=edge",
		"--podman-runtime", "runc", "--podman-ulimit", "nofile=1024:1024", "--podman-ulimit", "nproc=1024:1024", "--reconcile-interval", "1m0s"}

	first := install(t, args...)
	snap1 := snapshot(t, root)
	second := install(t, args...)
	snap2 := snapshot(t, root)
	if !reflect.DeepEqual(snap1, snap2) {
		for k := range snap1 {
			if snap1[k] != snap2[k] {
				t.Errorf("%s changed on the second run", k)
			}
		}
		for k := range snap2 {
			if _, ok := snap1[k]; !ok {
				t.Errorf("%s appeared on the second run", k)
			}
		}
	}
	if !strings.Contains(first, "user fleet-agent: created") || !strings.Contains(second, "user fleet-agent: exists") ||
		strings.Contains(second, "written") || strings.Contains(second, "added") || strings.Contains(second, "linked") {
		t.Errorf("first run said:\n%s\nsecond run said:\n%s", first, second)
	}

	u, err := lookupUser(filepath.Join(root, "etc/passwd"), "fleet-agent")
	if err != nil || u == nil || u.home != "/var/lib/fleet-agent" {
		t.Fatalf("user: %+v, %v", u, err)
	}
	if fi, err := os.Stat(filepath.Join(root, u.home)); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(u.uid) {
		t.Errorf("home: %v", err)
	}
	for file, foreign := range map[string]string{"etc/subuid": foreignUID, "etc/subgid": foreignGID} {
		lines := subIDLines(t, filepath.Join(root, file))
		if got := strings.Join(lines[:len(lines)-1], "\n"); got != strings.TrimRight(foreign, "\n") {
			t.Errorf("%s: the foreign lines are now %q", file, got)
		}
		var mine []string
		for _, l := range lines {
			if strings.HasPrefix(l, "fleet-agent:") {
				mine = append(mine, l)
			}
		}
		if len(mine) != 1 || !strings.HasSuffix(mine[0], ":65536") {
			t.Errorf("%s: the user's lines %q", file, mine)
		}
		if o := overlap(lines); o != "" {
			t.Errorf("%s: overlapping ranges %s", file, o)
		}
	}
	if got := subIDLines(t, filepath.Join(root, "etc/subuid"))[3]; got != "fleet-agent:166536:65536" {
		t.Errorf("subuid range %q: want the first free one, fleet-agent:166536:65536", got)
	}

	conf, err := os.ReadFile(filepath.Join(root, "etc/fleet-agent/agent.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "etc/fleet-agent/agent.conf")); fi.Mode().Perm() != 0o640 || fi.Sys().(*syscall.Stat_t).Gid != uint32(u.gid) {
		t.Errorf("config mode %v gid %d", fi.Mode(), fi.Sys().(*syscall.Stat_t).Gid)
	}
	unit, err := os.ReadFile(filepath.Join(root, "etc/systemd/user/fleet-agent.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ExecStart=/usr/local/bin/fleet-agent --config=/etc/fleet-agent/agent.conf\n", "ConditionUser=fleet-agent\n", "WantedBy=default.target\n", "Restart=always\n"} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("the unit has no %q:\n%s", want, unit)
		}
	}
	if target, err := os.Readlink(filepath.Join(root, "etc/systemd/user/default.target.wants/fleet-agent.service")); err != nil || target != "/etc/systemd/user/fleet-agent.service" {
		t.Errorf("enable link: %q, %v", target, err)
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/systemd/linger/fleet-agent")); err != nil {
		t.Errorf("linger: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(root, "usr/local/bin/fleet-agent")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("binary: %v", err)
	}

	// The agent reads what install wrote; the command line wins.
	flags := flag.NewFlagSet("agent", flag.ContinueOnError)
	af := bindAgentFlags(flags, "host")
	if err := flags.Parse([]string{"--podman-runtime", "crun"}); err != nil {
		t.Fatal(err)
	}
	if err := loadConfig(flags, filepath.Join(root, "etc/fleet-agent/agent.conf")); err != nil {
		t.Fatalf("%v\n%s", err, conf)
	}
	if *af.url != "tls://nats.example.com:4222" || *af.creds != "/etc/fleet-agent/device.creds" || *af.caFile != "/etc/fleet-agent/ca.pem" ||
		*af.id != "pi-7" || *af.labels != "device=pi-7,site=lyon,tier=edge" || af.rt.OCIRuntime != "crun" ||
		!reflect.DeepEqual(af.rt.Ulimits, []string{"nofile=1024:1024", "nproc=1024:1024"}) || af.rt.ReconcileInterval != time.Minute {
		t.Errorf("the agent read url=%q creds=%q ca=%q id=%q labels=%q runtime %+v from\n%s", *af.url, *af.creds, *af.caFile, *af.id, *af.labels, *af.rt, conf)
	}

	// A changed setting rewrites the configuration and nothing else.
	install(t, append(args, "--nats-url", "tls://nats2.example.com:4222")...)
	snap3 := snapshot(t, root)
	for k := range snap3 {
		if snap3[k] != snap2[k] && k != "/etc/fleet-agent/agent.conf" {
			t.Errorf("%s changed with the NATS URL", k)
		}
	}
	if snap3["/etc/fleet-agent/agent.conf"] == snap2["/etc/fleet-agent/agent.conf"] || !strings.Contains(snap3["/etc/fleet-agent/agent.conf"], "nats-url=tls://nats2.example.com:4222\n") {
		t.Errorf("the configuration did not follow the new URL: %s", snap3["/etc/fleet-agent/agent.conf"])
	}
}

func TestLoadConfigRefusesMistakes(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{"nats-url=nats://a\nnats-urll=nats://b\n", `:2: unknown setting "nats-urll"`},
		{"config=/etc/other\n", `unknown setting "config"`},
		{"podman-ulimit=nofile\n", "podman-ulimit"},
		{"just words\n", "is not NAME=VALUE"},
		{"# a comment\n\nreconcile-interval=soon\n", ":3: reconcile-interval"},
	} {
		p := filepath.Join(t.TempDir(), "agent.conf")
		if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		flags := flag.NewFlagSet("agent", flag.ContinueOnError)
		bindAgentFlags(flags, "host")
		if err := loadConfig(flags, p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.content, err, tc.want)
		}
	}
}

func TestInstallRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--root", "relative"}, "--root"},
		{[]string{"--device-id", "pi.7"}, "--device-id"},
		{[]string{"--device-id", "pi-7", "--labels", "device=pi-8"}, "the device label is the device's ID"},
		{[]string{"--labels", "bad key=v"}, "--labels"},
		{[]string{"--user", "Agent"}, "--user"},
		{[]string{"--subid-count", "1000"}, "at least 65536"},
		{[]string{"--config-file", "etc/agent.conf"}, "not an absolute path"},
		{[]string{"--nats-credentials-file", "device.creds"}, "not an absolute path"},
		{[]string{"--podman-ulimit", "nofile"}, "not name=soft"},
	} {
		root := t.TempDir()
		var out, errb bytes.Buffer
		code := runInstall(append([]string{"--root", root}, tc.args...), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
		if entries, _ := os.ReadDir(root); len(entries) != 0 {
			t.Errorf("%v wrote %d entries before refusing", tc.args, len(entries))
		}
	}
}

// TestInstallRealUser creates a real user on this machine (root "/": useradd, /etc/subuid and
// /etc/subgid; the unit, configuration and linger file in a directory) twice, checks that the second run
// changes nothing, and that rootless podman maps the user's subordinate range (podman unshare). The user
// is removed after (userdel, which also removes its subuid and subgid lines).
func TestInstallRealUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test creates a user: run it as root")
	}
	user := fmt.Sprintf("fa-test-%d", os.Getpid()%100000)
	dir, err := os.MkdirTemp("", "fleet-agent-install-") // not t.TempDir: its parent is 0700, the user reads its home under dir
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	uid := -1
	t.Cleanup(func() {
		defer func() { _ = os.RemoveAll(dir) }()
		if uid >= 0 {
			cmd := exec.Command("runuser", "-u", user, "--", "env", "HOME="+filepath.Join(dir, "home"), "podman", "system", "reset", "--force")
			cmd.Dir = "/"
			_ = cmd.Run()
			_ = os.RemoveAll(fmt.Sprintf("/tmp/podman-run-%d", uid))
		}
		if b, err := exec.Command("userdel", user).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", user, err, b)
		}
		for _, f := range []string{"/etc/passwd", "/etc/subuid", "/etc/subgid"} {
			if data, _ := os.ReadFile(f); bytes.Contains(data, []byte(user+":")) {
				t.Errorf("%s still names %s after userdel", f, user)
			}
		}
	})
	args := []string{"--user", user, "--home", filepath.Join(dir, "home"), "--config-file", filepath.Join(dir, "agent.conf"),
		"--unit-dir", filepath.Join(dir, "user"), "--linger-dir", filepath.Join(dir, "linger"), "--copy-binary=false",
		"--device-id", "real-device", "--nats-url", "nats://127.0.0.1:4222"}
	read := func() map[string]string {
		out := snapshot(t, dir)
		for _, f := range []string{"/etc/passwd", "/etc/group", "/etc/subuid", "/etc/subgid"} {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(l, user+":") {
					out[f] += l + "\n"
				}
			}
		}
		return out
	}
	install(t, args...)
	u, err := lookupUser("/etc/passwd", user)
	if err != nil || u == nil {
		t.Fatalf("user %s: %+v, %v", user, u, err)
	}
	uid = u.uid
	first := read()
	second := install(t, args...)
	if got := read(); !reflect.DeepEqual(first, got) {
		t.Errorf("the second run changed:\n%v\n%v\n%s", first, got, second)
	}
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		lines := strings.Split(strings.TrimRight(first[f], "\n"), "\n")
		if len(lines) != 1 {
			t.Fatalf("%s: %q", f, lines)
		}
		if o := overlap(subIDLines(t, f)); o != "" {
			t.Errorf("%s: overlapping ranges %s", f, o)
		}
	}
	if _, ok := first["/linger/"+user]; !ok {
		t.Errorf("no linger file in %v", first)
	}

	// Rootless podman: the user namespace maps the user's subordinate range.
	start := strings.Split(strings.TrimSpace(first["/etc/subuid"]), ":")[1]
	cmd := exec.Command("runuser", "-u", user, "--", "env", "HOME="+filepath.Join(dir, "home"), "podman", "--runtime", "runc", "unshare", "cat", "/proc/self/uid_map")
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("podman unshare as %s: %v: %s", user, err, out)
	}
	want := fmt.Sprintf("1 %s 65536", start)
	if !strings.Contains(strings.Join(strings.Fields(string(out)), " "), want) {
		t.Errorf("podman unshare's uid_map:\n%s\nwant a line %q", out, want)
	}
}
