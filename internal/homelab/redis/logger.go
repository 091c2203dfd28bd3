package redis

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// go-redis prints its connection errors to stderr by itself. Every error already reaches Ping's caller,
// which turns it into a condition and an event, so the operator's log gets no second, unstructured copy.
func init() { goredis.SetLogger(discard{}) }

type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}
