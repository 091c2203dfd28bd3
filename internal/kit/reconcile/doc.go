// Package reconcile is the kit every controller of the operator reconciles with: steps that return
// (ctrl.Result, error) and Finish, the one end of a Reconcile that runs them, announces and writes the
// status; a Session that applies children, turns what happened into conditions and emits every event;
// the condition helpers and Ready's summary; a status writer that applies status under a field owner of
// its own; the Finalizer helper; and readiness of the children other controllers roll out (Deployments
// and StatefulSets through kstatus, Certificates through cert-manager's conditions).
package reconcile
