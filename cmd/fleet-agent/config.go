package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// agentFlags are the flags that configure the agent: the command line's, and the settings of its
// --config file (which fleet-agent install writes).
type agentFlags struct {
	url, creds, caFile, certFile, keyFile, id, labels *string
	rt                                                *runtimeOptions
}

// bindAgentFlags adds the agent's flags to fs; hostname is --device-id's default.
func bindAgentFlags(fs *flag.FlagSet, hostname string) *agentFlags {
	return &agentFlags{
		url:      fs.String("nats-url", nats.DefaultURL, "URL of the fleet's NATS server."),
		creds:    fs.String("nats-credentials-file", "", "NATS .creds file of this device, issued by 'fleet-auth device --id <device-id>'; NATS_USER and NATS_PASSWORD in the environment authenticate with a user and password instead."),
		caFile:   fs.String("nats-ca-file", "", "PEM file of the CAs that sign the NATS server's certificate; set, the connection requires TLS."),
		certFile: fs.String("nats-cert-file", "", "PEM client certificate for a NATS server that verifies clients (with --nats-key-file)."),
		keyFile:  fs.String("nats-key-file", "", "PEM key of --nats-cert-file."),
		id:       fs.String("device-id", hostname, "This device's ID: 1-128 letters, digits, '-' or '_'. Defaults to the host name."),
		labels:   fs.String("labels", "", "This device's own labels, which Deployments select on: key=value pairs separated by commas. The labels a namespace policy names count only from the credentials (fleet-auth device --labels), which win a conflict."),
		rt:       bindRuntimeFlags(fs),
	}
}

// configFlag is the flag naming the agent's configuration file.
const configFlag = "config"

// loadConfig reads the configuration file at path into fs: one setting a line, NAME=VALUE where NAME
// is one of fs's flags without its dashes; blank lines and lines starting with '#' are ignored; a flag
// that may repeat (podman-ulimit) may have several lines. A flag given on the command line wins over the
// file. An unknown name or a bad value is an error naming the line, so a typo fails at start.
func loadConfig(fs *flag.FlagSet, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return fmt.Errorf("%s:%d: %q is not NAME=VALUE", path, n, line)
		}
		if name == configFlag || fs.Lookup(name) == nil {
			return fmt.Errorf("%s:%d: unknown setting %q", path, n, name)
		}
		if onCommandLine[name] {
			continue
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", path, n, name, err)
		}
	}
	return sc.Err()
}
