// Package reconcile is the kit every controller of the operator reconciles with: steps that return
// (ctrl.Result, error) and one helper that runs them in order, a Session that applies children and turns
// what happened into conditions and events, the condition helpers and Ready's summary, and a status
// writer that applies status under a field owner of its own.
package reconcile
