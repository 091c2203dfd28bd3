package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

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

// playErgoRestore is where the restore of the ErgoNetwork goes once ErgoNetwork's spec.restore has a
// controller: a new network with spec.restore.backup: backupNetworkName, its restore Job run here into
// its claim's directory, and the accounts and channels read back with buntdb. Until then it says so.
func playErgoRestore(_ context.Context, e *Env, _ client.Object) error {
	e.Step("Restoring ErgoNetwork %s from Backup %s: not shown yet", backupNetwork, backupNetworkName)
	e.Printf("(ErgoNetwork's spec.restore is in the API; its controller is being built. This step is the hook for it.)")
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
