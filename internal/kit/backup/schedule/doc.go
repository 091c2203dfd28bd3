// Package schedule is the pure logic of a BackupSchedule: reading its cron expression (UTC, five fields or
// a descriptor), deciding when a Backup is due, and choosing which Backups retention prunes. It has no
// client and no clock of its own, so the controller and the metrics share one reading of a schedule and
// the rules are table-tested at their boundaries.
package schedule
