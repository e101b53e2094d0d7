// Package connflags registers the flags that secure delayq's connections,
// the same names and help texts in delayd, delayctl (through pflag's
// AddGoFlagSet) and the load tool:
//
//	--kafka-tls, --kafka-tls-ca, --kafka-tls-cert, --kafka-tls-key,
//	--kafka-tls-server-name, --kafka-sasl, --kafka-sasl-user,
//	--kafka-sasl-password (prefer DELAYQ_KAFKA_SASL_PASSWORD)
//	--redis-tls-ca, --redis-tls-cert, --redis-tls-key
//
// delayd and delayctl read every flag from its DELAYQ_* variable too
// (cmd/internal/envflag); the load tool reads the password from
// DELAYQ_KAFKA_SASL_PASSWORD (KafkaPassword).
package connflags
