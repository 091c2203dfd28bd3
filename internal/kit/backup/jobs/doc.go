// Package jobs builds the Kubernetes objects of a backup: the Job that runs `platform-operator backup put`
// next to the data tool, and the ConfigMap holding its store configuration file; those of a restore into
// a new PostgresDatabase (restore.go): its Job running `backup restore`, ConfigMap and credentials Secret;
// those of a restore of a datastore into a new object's claim (datastorerestore.go: an ErgoNetwork's
// ircd.db), sharing the datastore backup's pod (datastore.go); and those of a restore drill (drill.go): the scratch PostgresDatabase and the Job running `backup
// verify`. Pure functions: no client.
package jobs
