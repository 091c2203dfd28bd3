// Package redis reads a RedisConnection's settings from its Secret and asks the server for PING,
// classifying what went wrong into the reasons users see (unreachable, authentication failed, server
// error).
package redis
