package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/datastore"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
)

// The ErgoNetwork part of the backup scenario: a network of the scenario's own, its ircd.db written where
// its claim's volume lives on this machine, and a Backup of it.
const (
	backupNetwork     = "backup-demo-net"
	backupNetworkName = "backup-demo-net-now"
	restoredNetwork   = "backup-demo-net-restored"
)

// playErgoBackup makes an ErgoNetwork, waits for it to be Ready (kwok runs its pod), writes a fixture
// ircd.db (ergo's keys, written with buntdb as ergo writes them) into the directory of its claim's volume,
// and backs it up: the Backup's Job runs here with that directory as the claim.
func playErgoBackup(ctx context.Context, e *Env, obj client.Object) error {
	ns := obj.GetNamespace()
	e.Step("Making ErgoNetwork %s to back up (no TLS, one plain listener)", backupNetwork)
	n := &ircv1.ErgoNetwork{TypeMeta: metav1.TypeMeta{APIVersion: ircv1.GroupVersion.String(), Kind: "ErgoNetwork"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backupNetwork},
		Spec: ircv1.ErgoNetworkSpec{Hostname: backupNetwork + ".irc.example.com", NetworkName: "BackupDemo",
			Listeners: []ircv1.Listener{{Address: ":6667"}}}}
	if err := e.Client.Patch(ctx, n, client.Apply, client.FieldOwner(e.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply ErgoNetwork %s: %w", backupNetwork, err)
	}
	state, err := e.Poll(ctx, n, ConditionTrue(readyCondition))
	if err != nil {
		return err
	}
	e.Printf("ErgoNetwork %s: %s (its pod runs on kwok's fake node: no ergo runs)", backupNetwork, state)

	dir, err := claimDirectory(ctx, e, ns, ergo.PVCName(n))
	if err != nil {
		return err
	}
	e.Step("Playing ergo: writing an ircd.db into the claim's volume, %s", dir)
	e.Printf("(ergo does not run on the fake node; internal/irc/ergo/datastore writes the file with buntdb and ergo's keys)")
	counts, err := datastore.WriteFixture(filepath.Join(dir, ergo.DatastoreFile), datastore.Fixture{
		Accounts: []string{"ada", "grace", "linus"}, Channels: []string{"#lobby", "#ops"}})
	if err != nil {
		return fmt.Errorf("write ircd.db: %w", err)
	}
	e.Printf("ircd.db: %d accounts, %d channels", counts.Accounts, counts.Channels)

	e.Step("Asking for a Backup of ErgoNetwork %s now: Backup %s", backupNetwork, backupNetworkName)
	b := &backupv1.Backup{TypeMeta: metav1.TypeMeta{APIVersion: backupv1.GroupVersion.String(), Kind: "Backup"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backupNetworkName},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceErgoNetwork, Name: backupNetwork},
			Store: backupStoreName, ArtifactPolicy: backupv1.ArtifactRetain}}
	if err := e.Client.Patch(ctx, b, client.Apply, client.FieldOwner(e.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply Backup %s: %w", backupNetworkName, err)
	}
	if err := runJobHere(ctx, e, client.ObjectKey{Namespace: ns, Name: jobs.Name(b)},
		"`platform-operator backup put --format buntdb` reading the claim mounted read-only",
		map[string]string{jobs.DatastoreVolume: dir}); err != nil {
		return err
	}
	e.Step("Waiting for Backup %s to be Completed", backupNetworkName)
	if _, err := e.Poll(ctx, b, func(o client.Object) (bool, string) {
		b := o.(*backupv1.Backup)
		return b.Status.Phase == backupv1.BackupCompleted || b.Status.Phase == backupv1.BackupFailed, "phase " + string(b.Status.Phase)
	}); err != nil {
		return err
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		return err
	}
	printBackups(e, []backupv1.Backup{*b})
	if b.Status.Phase != backupv1.BackupCompleted {
		return fmt.Errorf("backup %s is %s: %s", backupNetworkName, b.Status.Phase, readyMessage(b.Status.Conditions))
	}
	return nil
}

// playErgoRestore makes a new ErgoNetwork with spec.restore.backup: backupNetworkName. The operator makes
// its claim and the restore Job, and holds ergo back; the Job runs here with the claim's directory, writing
// the backup's ircd.db into it, and only then does the operator make ergo's Deployment. The accounts and
// channels are read back from the new claim with buntdb.
func playErgoRestore(ctx context.Context, e *Env, obj client.Object) error {
	ns := obj.GetNamespace()
	e.Step("Restoring Backup %s into a new ErgoNetwork %s (spec.restore.backup: %s)", backupNetworkName, restoredNetwork, backupNetworkName)
	n := &ircv1.ErgoNetwork{TypeMeta: metav1.TypeMeta{APIVersion: ircv1.GroupVersion.String(), Kind: "ErgoNetwork"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: restoredNetwork},
		Spec: ircv1.ErgoNetworkSpec{Hostname: restoredNetwork + ".irc.example.com", NetworkName: "BackupDemo",
			Listeners: []ircv1.Listener{{Address: ":6667"}}, Restore: &ircv1.RestoreSource{Backup: backupNetworkName}}}
	if err := e.Client.Patch(ctx, n, client.Apply, client.FieldOwner(e.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply ErgoNetwork %s: %w", restoredNetwork, err)
	}
	key := client.ObjectKey{Namespace: ns, Name: jobs.DatastoreRestoreName(restoredNetwork)}
	if err := waitForJob(ctx, e, key); err != nil {
		return err
	}
	var deployments appsv1.DeploymentList
	if err := e.Client.List(ctx, &deployments, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, d := range deployments.Items {
		if metav1.IsControlledBy(&d, n) || d.Name == ergo.DeploymentName(n) {
			return fmt.Errorf("ergo's Deployment %s exists before the restore ran", d.Name)
		}
	}
	e.Printf("the operator made the claim and the restore Job; ergo's Deployment does not exist yet (it waits for the restore)")
	dir, err := claimDirectory(ctx, e, ns, ergo.PVCName(n))
	if err != nil {
		return err
	}
	if err := runJobHere(ctx, e, key, "`platform-operator backup restore --target-file` writing into the new claim, mounted read-write",
		map[string]string{jobs.DatastoreVolume: dir}); err != nil {
		return err
	}
	state, err := e.Poll(ctx, n, ConditionTrue(readyCondition))
	if err != nil {
		return err
	}
	e.Printf("ErgoNetwork %s: %s", restoredNetwork, state)
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(n), n); err != nil {
		return err
	}
	if f := n.Status.RestoredFrom; f != nil {
		e.Printf("status.restoredFrom: backup %s, store %s, source %s, id %s", f.Backup, f.Store, f.SourceName, f.ID)
	}
	counts, err := datastore.CountDB(filepath.Join(dir, ergo.DatastoreFile))
	if err != nil {
		return fmt.Errorf("read the restored ircd.db: %w", err)
	}
	e.Printf("the new claim's ircd.db, opened with buntdb: %d accounts, %d channels (the backed-up network had 3 and 2)", counts.Accounts, counts.Channels)
	if counts.Accounts != 3 || counts.Channels != 2 {
		return fmt.Errorf("restored ircd.db holds %d accounts and %d channels, want 3 and 2", counts.Accounts, counts.Channels)
	}
	return nil
}

// claimDirectory is the directory on this machine of the volume bound to claim ns/name: the local
// cluster's kube-controller-manager provisions hostPath volumes (localcluster.DefaultStorageClass), so
// the volume's path is a directory here. It is made when the provisioner has not.
func claimDirectory(ctx context.Context, e *Env, ns, name string) (string, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
		return "", fmt.Errorf("read claim %s: %w", name, err)
	}
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("claim %s is not bound", name)
	}
	pv := &corev1.PersistentVolume{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return "", fmt.Errorf("read volume %s: %w", pvc.Spec.VolumeName, err)
	}
	if pv.Spec.HostPath == nil {
		return "", fmt.Errorf("volume %s of claim %s is not a hostPath volume", pv.Name, name)
	}
	dir := pv.Spec.HostPath.Path
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}
