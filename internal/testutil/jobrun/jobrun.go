// Package jobrun runs the main container of a Job the operator made on this machine, as a kubelet would
// run it in the pod: the tests and the demo have an API server but no kubelet, and the backup, restore
// and drill Jobs run the operator's own binary with the data tools of the machine (pg_dump, pg_restore).
package jobrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// Local runs Jobs' main containers here.
type Local struct {
	// Reader reads the Secrets and ConfigMaps the container's env and volumes name.
	Reader client.Reader
	// Binary is the operator's binary: it replaces jobs.Binary, the copy the init container would make.
	Binary string
	// Path is the container's PATH: the directories of the data tools the image would hold.
	Path string
	// Commands replace programs of the image by this machine's: an argument equal to a key becomes its
	// value, e.g. {jobs.OperatorCommand: Binary} for a Job that runs the operator's image's own /manager.
	Commands map[string]string
	// Dir is a directory of the caller's for the mounted files and the termination log.
	Dir string
	// Volumes are local directories for the pod's other volumes by volume name (a claim's, an
	// emptyDir's): a mount of one of them maps its path to the directory.
	Volumes map[string]string
	// SecretWait is how long an env's Secret may be missing before Run fails (a kubelet waits for it:
	// a restore's credentials Secret is made just after its Job). Default 30 s.
	SecretWait time.Duration
}

// Result is how the container ended.
type Result struct {
	// ExitCode is the process's exit status.
	ExitCode int
	// Output is its stdout and stderr together.
	Output string
	// Termination is what it wrote to jobs.TerminationLog, the container's termination message.
	Termination string
}

// Run runs the Job's first container's command: ConfigMap volumes become files under Dir at the mount's
// place, env values come from their secretKeyRef (or value), $(VAR) is expanded as the kubelet does,
// jobs.Binary and jobs.TerminationLog are replaced by Binary and a file under Dir, and Commands' keys by
// their values.
func (l Local) Run(ctx context.Context, job *batchv1.Job) (Result, error) {
	pod := job.Spec.Template.Spec
	if len(pod.Containers) == 0 {
		return Result{}, errors.New("the Job has no container")
	}
	c := pod.Containers[0]
	mounts, err := l.configMapMounts(ctx, job.Namespace, pod.Volumes, c.VolumeMounts)
	if err != nil {
		return Result{}, err
	}
	for _, m := range c.VolumeMounts {
		if dir, ok := l.Volumes[m.Name]; ok {
			mounts[m.MountPath] = dir
		}
	}
	values := map[string]string{}
	env := []string{"PATH=" + l.Path}
	for _, e := range c.Env {
		v, err := l.envValue(ctx, job.Namespace, e)
		if err != nil {
			return Result{}, err
		}
		values[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	termination := filepath.Join(l.Dir, "termination-log")
	args := make([]string, 0, len(c.Command)+len(c.Args))
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		switch {
		case a == jobs.Binary:
			a = l.Binary
		case a == jobs.TerminationLog:
			a = termination
		case l.Commands[a] != "":
			a = l.Commands[a]
		case strings.HasPrefix(a, "$(") && strings.HasSuffix(a, ")"):
			a = values[a[2:len(a)-1]]
		default:
			for mountPath, dir := range mounts {
				if rest, ok := strings.CutPrefix(a, mountPath+"/"); ok {
					a = filepath.Join(dir, rest)
				}
			}
		}
		args = append(args, a)
	}
	if len(args) == 0 {
		return Result{}, errors.New("the container has no command")
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		return Result{}, fmt.Errorf("run %s: %w", args[0], err)
	}
	r := Result{ExitCode: cmd.ProcessState.ExitCode(), Output: out.String()}
	if b, err := os.ReadFile(termination); err == nil {
		r.Termination = string(b)
	}
	return r, nil
}

// configMapMounts writes each ConfigMap volume the container mounts into a directory under Dir and maps
// the mount path to it.
func (l Local) configMapMounts(ctx context.Context, ns string, volumes []corev1.Volume, vm []corev1.VolumeMount) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range vm {
		for _, v := range volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			var cm corev1.ConfigMap
			if err := l.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: v.ConfigMap.Name}, &cm); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			dir := filepath.Join(l.Dir, "volumes", v.Name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
			files := map[string]string{}
			for k := range cm.Data {
				files[k] = k
			}
			if len(v.ConfigMap.Items) > 0 {
				files = map[string]string{}
				for _, it := range v.ConfigMap.Items {
					files[it.Key] = it.Path
				}
			}
			for key, path := range files {
				if err := os.WriteFile(filepath.Join(dir, path), []byte(cm.Data[key]), 0o600); err != nil {
					return nil, err
				}
			}
			out[m.MountPath] = dir
		}
	}
	return out, nil
}

// envValue is an env var's value: its value, or its Secret's key once the Secret exists.
func (l Local) envValue(ctx context.Context, ns string, e corev1.EnvVar) (string, error) {
	if e.ValueFrom == nil {
		return e.Value, nil
	}
	ref := e.ValueFrom.SecretKeyRef
	if ref == nil {
		return "", fmt.Errorf("env %s: only values and secretKeyRefs are run here", e.Name)
	}
	patience := l.SecretWait
	if patience == 0 {
		patience = 30 * time.Second
	}
	var s corev1.Secret
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, patience, true, func(ctx context.Context) (bool, error) {
		err := l.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &s)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return "", fmt.Errorf("env %s: Secret %s: %w", e.Name, ref.Name, err)
	}
	return string(s.Data[ref.Key]), nil
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// OperatorBinary is $OPERATOR_BINARY (make test sets it to bin/platform-operator), else the operator
// built once per process into a new directory under $TMPDIR, which a narrow `go test` run leaves there.
func OperatorBinary() (string, error) {
	if p := os.Getenv("OPERATOR_BINARY"); p != "" {
		return p, nil
	}
	buildOnce.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			buildErr = err
			return
		}
		root, err := testutil.FindRepoRoot(wd)
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "platform-operator-bin-")
		if err != nil {
			buildErr = err
			return
		}
		bin := filepath.Join(dir, "platform-operator")
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w: %s", err, out)
			return
		}
		built = bin
	})
	return built, buildErr
}

// WithPostgres is a Local for the Jobs whose image holds PostgreSQL's client tools (pg_dump, pg_restore):
// the operator's binary (OperatorBinary) and this machine's tools (postgrestest.BinDir) on the PATH.
func WithPostgres(reader client.Reader, dir string) (Local, error) {
	bin, err := OperatorBinary()
	if err != nil {
		return Local{}, err
	}
	pgBin, err := postgrestest.BinDir()
	if err != nil {
		return Local{}, err
	}
	return Local{Reader: reader, Binary: bin, Path: pgBin + ":/usr/bin:/bin", Dir: dir}, nil
}
