package homelab

import (
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/redis"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// redisConnectionScope is one RedisConnection reconcile's working state.
type redisConnectionScope struct {
	*reconcile.Session
	conn     *homelabv1.RedisConnection
	status   *homelabv1.RedisConnectionStatus
	settings *redis.Settings
}

// newRedisConnectionScope starts one reconcile of conn, on a copy of its status.
func (r *RedisConnectionReconciler) newRedisConnectionScope(conn *homelabv1.RedisConnection) *redisConnectionScope {
	status := conn.Status.DeepCopy()
	return &redisConnectionScope{
		Session: &reconcile.Session{Owner: conn, Before: conn.Status.Conditions, Conditions: &status.Conditions, Client: r.Client, Recorder: r.Recorder},
		conn:    conn, status: status,
	}
}
