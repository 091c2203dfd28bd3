package backup

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
)

// Command is the operator binary's subcommand that runs this program: `platform-operator backup ...`.
const Command = "backup"

// Exit codes of Main.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

const usage = `usage:
  platform-operator backup put --store-config FILE --namespace N --kind K --name X --id ID
                               [--format pg_dump-custom|buntdb] [--tool-version V] [--file PATH | -- COMMAND ARGS...]
                               [--pg-facts-url-env VAR]  (with -- pg_dump: facts counted in the dump's snapshot)
      Streams the output of COMMAND (run by put, which commits the artifact only when it exits 0), or PATH,
      or standard input, to the artifact and prints its manifest (JSON) on stdout.
  platform-operator backup get --store-config FILE --namespace N --kind K --name X --id ID [--file PATH]
      Streams the artifact's data to PATH (default: standard output) and checks its size and SHA-256.
      On a mismatch it exits 1 and the output is invalid; with --file nothing is left at PATH.
  platform-operator backup verify --store-config FILE --namespace N --kind K --name X --id ID
                                  [--scratch-url-env VAR] [--result-file PATH]
      A restore drill: restores the artifact (into the empty scratch database in $VAR for pg_dump-custom)
      and checks its checksum and content against the facts recorded at backup time. Prints one JSON line;
      exits 0 verified, 1 failed, 2 usage.
  platform-operator backup restore --store-config FILE --namespace N --kind K --name X --id ID
                                   (--target-url-env VAR | --target-file PATH) [--result-file PATH]
      With --target-url-env: streams the pg_dump-custom artifact into pg_restore --no-owner --no-acl
      --exit-on-error -d $VAR, an empty database (one with tables is refused). Restored only when the
      checksum matched and pg_restore exited 0; a failed restore may have written part of the data: that
      database is unusable.
      With --target-file: downloads the datastore artifact (buntdb) to a temporary file next to PATH, checks
      its checksum, opens it with the datastore's library (and compares it with the facts recorded at
      backup time), then moves it to PATH; an existing PATH is refused and never written over, and a
      failure leaves nothing at PATH.
      Prints one JSON line; exits 0 restored, 1 failed, 2 usage.
See docs/backup.md.
`

// Main runs `platform-operator backup` with args (those after "backup") and returns the exit code. ctx
// cancelled (the process signalled) aborts the transfer, leaving no complete-looking artifact.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	verb := args[0]
	if verb == verifyCommand {
		return verifyMain(ctx, args[1:], stdout, stderr)
	}
	if verb == restoreCommand {
		return restoreMain(ctx, args[1:], stdout, stderr)
	}
	if verb == "copy-binary" {
		return copyBinary(args[1:], stderr)
	}
	fs := flag.NewFlagSet("backup "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	storeConfig := fs.String("store-config", "", "the store configuration file (JSON or YAML, docs/backup.md)")
	var ref Ref
	fs.StringVar(&ref.Namespace, "namespace", "", "the source object's namespace")
	fs.StringVar(&ref.Kind, "kind", "", "the source object's kind")
	fs.StringVar(&ref.Name, "name", "", "the source object's name")
	fs.StringVar(&ref.ID, "id", "", "the backup's id")
	file := fs.String("file", "", "read (put) or write (get) this file instead of stdin or stdout")
	var format, toolVersion *string
	pgFactsEnv := new(string)
	switch verb {
	case "put":
		format = fs.String("format", string(FormatPgDumpCustom), "what the data is: pg_dump-custom or buntdb")
		toolVersion = fs.String("tool-version", "", "the version of the tool that produced the data")
		pgFactsEnv = fs.String("pg-facts-url-env", "", "the environment variable holding the database's URL, to count its tables' rows in the dump's snapshot (-- pg_dump only)")
	case "get":
	default:
		fmt.Fprintf(stderr, "backup: unknown command %q\n%s", verb, usage)
		return exitUsage
	}
	if err := fs.Parse(args[1:]); err != nil {
		return exitUsage
	}
	// flag stops at "--": what follows is the producer's command line (put only).
	command := fs.Args()
	if len(command) > 0 && (verb != "put" || len(args) < len(command)+1 || args[len(args)-len(command)-1] != "--" || *file != "") {
		fmt.Fprintf(stderr, "backup %s: unexpected arguments %q (a command goes after --, with put and without --file)\n", verb, command)
		return exitUsage
	}
	if *storeConfig == "" {
		fmt.Fprintf(stderr, "backup %s: --store-config is required\n", verb)
		return exitUsage
	}
	if err := ref.Validate(); err != nil {
		fmt.Fprintf(stderr, "backup %s: %v\n", verb, err)
		return exitUsage
	}
	if verb == "put" {
		if err := checkFactsArgs(Format(*format), *pgFactsEnv, command); err != nil {
			fmt.Fprintf(stderr, "backup put: %v\n", err)
			return exitUsage
		}
	}
	repo, err := open(*storeConfig, ref.Namespace)
	if err != nil {
		fmt.Fprintf(stderr, "backup %s: %v\n", verb, err)
		return exitError
	}
	switch verb {
	case "put":
		err = put(ctx, repo, ref, PutOptions{Format: Format(*format), ToolVersion: *toolVersion}, *pgFactsEnv, *file, command, stdin, stdout, stderr)
	case "get":
		err = get(ctx, repo, ref, *file, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "backup %s: %v\n", verb, err)
		return exitError
	}
	return exitOK
}

// open builds the repository of namespace from the store configuration file.
func open(storeConfig, namespace string) (*Repository, error) {
	cfg, err := LoadStoreFile(storeConfig)
	if err != nil {
		return nil, err
	}
	store, err := objectstore.New(cfg)
	if err != nil {
		return nil, err
	}
	scoped, err := store.Scope(namespace)
	if err != nil {
		return nil, err
	}
	return NewRepository(scoped), nil
}

// put streams the data from command's stdout (its stderr passed through, its exit status deciding the
// commit), file, or stdin.
func put(ctx context.Context, repo *Repository, ref Ref, opts PutOptions, pgFactsEnv, file string, command []string, stdin io.Reader, stdout, stderr io.Writer) error {
	facts, err := beginFacts(ctx, opts.Format, pgFactsEnv, file, command)
	if err != nil {
		return err
	}
	defer facts.end()
	command, opts.Facts, opts.FactsAfterData = facts.command, facts.facts, facts.afterData
	in := stdin
	switch {
	case len(command) > 0:
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // an upload that fails ends the producer
		cmd := exec.CommandContext(ctx, command[0], command[1:]...)
		cmd.Stdin, cmd.Stderr = stdin, stderr
		// The producer gets its own process group, killed whole when the put is cancelled (a signal, a
		// failed upload): a shell's children would otherwise hold the pipe open. It dies with put, too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		defer func() {
			if cmd.ProcessState == nil {
				cancel()
				_ = cmd.Wait()
			}
		}()
		in = out
		opts.DataDone = func() error {
			if err := cmd.Wait(); err != nil {
				return fmt.Errorf("%s: %w", command[0], err)
			}
			return nil
		}
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		in = f
	}
	m, err := repo.Put(ctx, ref, facts.wrap(in), opts)
	if err != nil {
		return err
	}
	return printManifest(stdout, m)
}

// get streams to stdout, or to file through a temporary file in the same directory that is renamed into
// place only when the checksum matched: a file at PATH is always a verified copy.
func get(ctx context.Context, repo *Repository, ref Ref, file string, stdout io.Writer) error {
	if file == "" {
		_, err := repo.Get(ctx, ref, stdout)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".partial-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	m, err := repo.Get(ctx, ref, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	return printManifest(stdout, m)
}

func printManifest(w io.Writer, m Manifest) error {
	doc, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", doc)
	return err
}

// IsCommand reports whether args (os.Args) ask for this program rather than the manager.
func IsCommand(args []string) bool { return len(args) > 1 && args[1] == Command }
