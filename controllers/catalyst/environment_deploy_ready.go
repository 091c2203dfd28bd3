package catalyst

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// keepDeployed keeps an unchanged deploy in place: manifest and kustomize objects that drifted are
// applied again as the tenant (nothing is written when none did), and a Helm release whose objects went
// missing is upgraded again with the same chart and values.
func (r *deployPhase) keepDeployed(ctx context.Context, s *environmentScope, in *deployInput, rd *rendered) (ctrl.Result, error) {
	objs := rd.objs
	if in.typ == catalystv1.DeploymentHelm {
		for _, o := range objs {
			if _, hook := o.GetAnnotations()["helm.sh/hook"]; hook {
				continue // Helm deletes hooks after they ran, as their delete policy says
			}
			if _, err := r.readLive(ctx, s, o.GroupVersionKind(), client.ObjectKeyFromObject(o)); apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Info("a deployed object is gone; upgrading the release again", "object", render.Describe(o))
				st := s.status.Deployment.DeepCopy()
				s.status.Deployment = st
				return r.deployHelm(ctx, s, in, rd, st)
			}
		}
		return r.reportReady(ctx, s, objs)
	}
	n, ok, res, err := r.applyObjects(ctx, s, objs, false)
	if !ok {
		return res, err
	}
	if n.written > 0 {
		s.Normalf(reconcile.EventUpdated, "Restored %d deployed objects of commit %s that had drifted",
			n.written, shortCommit(in.req.Commit))
	}
	r.remember(s.env, rd)
	return r.reportReady(ctx, s, objs)
}

// reportReady sets DeploymentReady from the deployed Deployments and StatefulSets: True when every one
// has rolled out its current spec, every replica ready and available (kstatus Current, through
// reconcile.DeploymentReady and StatefulSetReady); ReplicaFailure, naming the workload and quoting the API server,
// when a workload's pods are refused (Pod Security, quota), which no amount of waiting fixes.
func (r *deployPhase) reportReady(ctx context.Context, s *environmentScope, objs []*unstructured.Unstructured) (ctrl.Result, error) {
	var waiting, refused []string
	workloads := 0
	for _, o := range objs {
		var ok bool
		var msg, failure string
		key := client.ObjectKeyFromObject(o)
		switch o.GroupVersionKind() {
		case appsv1.SchemeGroupVersion.WithKind("Deployment"):
			d := &appsv1.Deployment{}
			if err := r.readTyped(ctx, s, key, d); err != nil {
				return ctrl.Result{}, err
			}
			ready := reconcile.DeploymentReady(d)
			ok, msg = ready.Ready, ready.Message
			failure = deploymentFailure(d)
		case appsv1.SchemeGroupVersion.WithKind("StatefulSet"):
			ss := &appsv1.StatefulSet{}
			if err := r.readTyped(ctx, s, key, ss); err != nil {
				return ctrl.Result{}, err
			}
			ready := reconcile.StatefulSetReady(ss)
			ok, msg = ready.Ready, ready.Message
		default:
			continue
		}
		workloads++
		switch {
		case !ok && failure != "":
			refused = append(refused, o.GetKind()+" "+o.GetName()+": "+failure)
		case !ok:
			waiting = append(waiting, o.GetKind()+" "+o.GetName()+": "+msg)
		}
	}
	commit := shortCommit(s.status.Deployment.Commit)
	poll := ctrl.Result{}
	if s.status.Deployment.Type == catalystv1.DeploymentHelm {
		// Helm labels what it installs managed-by Helm, so the cache does not see it: poll.
		poll = ctrl.Result{RequeueAfter: helmPoll}
	}
	switch {
	case len(refused) > 0:
		slices.Sort(refused)
		// The message is the news (which workloads, refused why), so it is s.Refuse, not s.Fail.
		s.Refuse(catalystv1.ConditionDeploymentReady, catalystv1.ReasonReplicaFailure,
			fmt.Sprintf("commit %s deployed; the cluster refuses the pods of %s", commit, strings.Join(refused, "; ")))
		return poll, nil
	case len(waiting) > 0:
		slices.Sort(waiting)
		s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionFalse, catalystv1.ReasonProgressing,
			fmt.Sprintf("commit %s deployed; waiting for %s", commit, strings.Join(waiting, "; ")))
		return poll, nil
	}
	s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionTrue, catalystv1.ReasonReady,
		fmt.Sprintf("commit %s deployed (%s); %d Deployments and StatefulSets available", commit, s.status.Deployment.Type, workloads))
	return ctrl.Result{}, nil
}

// readTyped reads a workload from the cache, or as the tenant from the API server when the cache lacks it
// (Helm's objects carry Helm's managed-by label, not the operator's).
func (r *deployPhase) readTyped(ctx context.Context, s *environmentScope, key client.ObjectKey, obj client.Object) error {
	err := r.Client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = s.tenant.Get(ctx, key, obj)
	}
	return err
}

// deploymentFailure is why the cluster refuses a Deployment's pods, empty when it does not: the
// Deployment controller copies its ReplicaSet's ReplicaFailure condition (reason FailedCreate, the API
// server's refusal as message: a Pod Security violation, an exceeded quota) onto the Deployment.
func deploymentFailure(d *appsv1.Deployment) string {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}
