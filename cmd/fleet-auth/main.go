// Command fleet-auth issues the fleet's NATS identities (docs/fleet.md, "Identity and permissions"):
// init makes the operator and the fleet account with one scoped signing key per role and writes the
// nats-server configuration include; device, operator and viewer issue .creds files; revoke revokes a
// user's credentials in the account JWT.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
)

const usage = `fleet-auth issues the IoT fleet's NATS credentials (docs/fleet.md).

  fleet-auth init     [--dir DIR]                       new operator, account, signing keys, nats-auth.conf
  fleet-auth device   [--dir DIR] --id ID [--labels k=v,...] [--out FILE]
                                                        ID.creds for a device's agent, with its credential labels
  fleet-auth operator [--dir DIR] [--out FILE]          operator.creds for the platform operator
  fleet-auth viewer   [--dir DIR] --name NAME [--out FILE] NAME.creds for a person's read-only fleetctl
  fleet-auth revoke   [--dir DIR] --creds FILE          revoke those credentials (rewrites account.jwt and nats-auth.conf)
  fleet-auth update-permissions [--dir DIR]             re-sign account.jwt with this release's role permissions (rewrites nats-auth.conf)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "fleet-auth:", err)
		os.Exit(1)
	}
}

func run(cmd string, args []string) error {
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	dir := fs.String("dir", ".", "The authority's directory: keys (0600), JWTs and nats-auth.conf.")
	id := fs.String("id", "", "The device's ID (device).")
	name := fs.String("name", "", "The person's name (viewer).")
	out := fs.String("out", "", "Where to write the .creds file (default: <name>.creds in the current directory).")
	creds := fs.String("creds", "", "The .creds file to revoke (revoke).")
	expires := fs.Duration("expires", 0, "Lifetime of the issued credentials (0: until revoked).")
	labelFlag := fs.String("labels", "", "The device's credential labels (device): key=value pairs separated by commas, the only labels a namespace policy matches (docs/fleet.md, Credential labels).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch cmd {
	case "init":
		for _, f := range []string{auth.OperatorSeedFile, auth.AccountJWTFile} {
			if _, err := os.Stat(filepath.Join(*dir, f)); err == nil {
				return fmt.Errorf("%s already holds an authority (%s): refusing to replace it", *dir, f)
			}
		}
		a, err := auth.Init()
		if err != nil {
			return err
		}
		if err := a.Write(*dir); err != nil {
			return err
		}
		fmt.Printf("wrote the authority to %s; include %s from nats-server.conf\n", *dir, filepath.Join(*dir, auth.ServerConfigFile))
		return nil
	case "device":
		labels, err := parseLabels(*labelFlag)
		if err != nil {
			return fmt.Errorf("--labels: %w", err)
		}
		return issue(*dir, auth.RoleDevice, *id, *out, *expires, labels)
	case "operator":
		return issue(*dir, auth.RoleOperator, auth.OperatorUser, *out, *expires, nil)
	case "viewer":
		return issue(*dir, auth.RoleViewer, *name, *out, *expires, nil)
	case "revoke":
		if *creds == "" {
			return fmt.Errorf("revoke needs --creds")
		}
		b, err := os.ReadFile(*creds)
		if err != nil {
			return err
		}
		key, user, _, err := auth.UserOf(b)
		if err != nil {
			return err
		}
		a, err := auth.Load(*dir)
		if err != nil {
			return err
		}
		if err := a.Revoke(key, time.Now()); err != nil {
			return err
		}
		if err := a.Write(*dir); err != nil {
			return err
		}
		fmt.Printf("revoked %s (%s); reload nats-server with the new %s\n", user, key, auth.ServerConfigFile)
		return nil
	case "update-permissions":
		a, err := auth.Load(*dir)
		if err != nil {
			return err
		}
		if err := a.UpdatePermissions(); err != nil {
			return err
		}
		if err := a.Write(*dir); err != nil {
			return err
		}
		fmt.Printf("re-signed the account with this release's permissions; reload nats-server with the new %s\n", auth.ServerConfigFile)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

func issue(dir string, r auth.Role, name, out string, expires time.Duration, labels map[string]string) error {
	if name == "" {
		return fmt.Errorf("%s needs a name (--id for a device, --name for a viewer)", r)
	}
	a, err := auth.Load(dir)
	if err != nil {
		return err
	}
	b, err := a.IssueWithLabels(r, name, expires, labels)
	if err != nil {
		return err
	}
	if out == "" {
		out = name + ".creds"
	}
	if err := auth.WriteCreds(out, b); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%s %s)\n", out, r, name)
	return nil
}

// parseLabels reads --labels: key=value pairs separated by commas (empty: none).
func parseLabels(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("%q is not key=value", kv)
		}
		out[k] = v
	}
	return out, auth.ValidLabels(out)
}
