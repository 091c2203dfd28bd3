// Package objectstore is the one description of an S3-compatible object store (Config: endpoint, bucket,
// prefix, region, credentials, CA bundle, server-side encryption) and its client, which every kind's backups
// use. A Store reaches the whole prefix; a Scoped handle reaches only one namespace's part of it and refuses
// any key outside (docs/backup.md).
package objectstore
