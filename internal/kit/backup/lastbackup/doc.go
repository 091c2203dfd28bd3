// Package lastbackup is how a source kind's own controller (PostgresDatabase, SojuBouncer) shows its last
// successful backup in its status: the cache rule and field index of Backups by their source, the watch
// that wakes an object when one of its Backups completes (or a Completed one changes or goes), and the
// newest Completed Backup of one object. Every source kind uses it, so they agree on what "last" means
// (docs/backup.md). Only the object's own controller writes the fields: the Backup controller does not.
package lastbackup
