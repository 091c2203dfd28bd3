// Package homelab holds the reconcilers of the homelab.mortenolsen.pro/v1 kinds: PostgresConnection,
// PostgresDatabase, RedisConnection, Domain and AuthentikServer, wired into the manager by Group.
package homelab
