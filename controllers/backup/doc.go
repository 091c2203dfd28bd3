// Package backup holds the controllers of the backup.josie.cloud API group: BackupStore (can the operator
// reach the store, and is its prefix the namespace's own) and Backup (one backup of one object, taken by a
// Job that runs the operator's own binary). The data path they drive is internal/kit/backup.
package backup
