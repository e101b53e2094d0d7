// Package redisconn turns delayq's Redis connection settings into a go-redis
// client, the same way for delayd, delayctl and the load tool: their
// --redis, --redis-master, --redis-cluster, --redis-username,
// --redis-password and --redis-tls flags fill a Config, and New returns a
// redis.UniversalClient.
//
// # Modes
//
// Config.Addrs and Config.MasterName choose the engine, as go-redis's
// NewUniversalClient does:
//
//   - one address: a single Redis (redis.Client);
//   - several addresses, or one with Config.Cluster: a Redis Cluster
//     (redis.ClusterClient), the addresses being seeds from which the client
//     learns the slot map; it follows MOVED and ASK redirects and splits
//     pipelines by node by itself;
//   - Config.MasterName: Redis Sentinel (a failover redis.Client), the
//     addresses being the sentinels; the client asks them for the current
//     master and follows a failover.
//
// Every client reads and writes masters only: delayq's scanner reads a zset
// and then removes what it read, which a lagging replica would get wrong.
//
// # Secrets
//
// Config.String and Config.LogValue show whether a password is set, never
// the password. Pass it through the environment (DELAYQ_REDIS_PASSWORD)
// rather than on the command line, where ps shows it.
//
// Ping checks a new client with a real call, and also catches a single
// address that is in fact a Redis Cluster node (ErrClusterNode): a plain
// client there would meet MOVED on most keys.
package redisconn
