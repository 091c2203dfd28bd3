// Package backup is the data path of backups: where an artifact lives in an object store (layout.go), what
// its manifest says (manifest.go), how one is written, read back with its checksum checked, listed and
// deleted (repository.go), and the program that the operator's binary runs as `platform-operator backup`
// (main.go). See docs/backup.md.
package backup
