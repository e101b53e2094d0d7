// Package tlsfiles builds a client *tls.Config from PEM files: a CA file
// that replaces the system roots, and a certificate and key for mutual
// TLS. The Kafka (kafka/kafkaauth) and Redis (internal/redisconn)
// connections of delayd, delayctl and the load tool read their
// --kafka-tls-* and --redis-tls-* files through it.
package tlsfiles
