// Package jobs builds the Kubernetes objects of a backup: the Job that runs `platform-operator backup put`
// next to the data tool, and the ConfigMap holding its store configuration file; and those of a restore
// into a new PostgresDatabase (restore.go): its Job running `backup restore`, ConfigMap and credentials
// Secret. Pure functions: no client.
package jobs
