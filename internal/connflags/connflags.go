package connflags

import (
	"flag"
	"strings"

	"github.com/delayq/delayq/kafka/kafkaauth"
)

// PasswordVar is the environment variable of the SASL password.
const PasswordVar = "DELAYQ_KAFKA_SASL_PASSWORD"

// Kafka registers the --kafka-tls* and --kafka-sasl* flags, which fill c.
func Kafka(fs *flag.FlagSet, c *kafkaauth.Config) {
	fs.BoolVar(&c.TLS, "kafka-tls", false, "connect to Kafka with TLS (verified against the system roots, or --kafka-tls-ca)")
	fs.StringVar(&c.CAFile, "kafka-tls-ca", "", "PEM file of the CA that signed the brokers' certificates (implies --kafka-tls)")
	fs.StringVar(&c.CertFile, "kafka-tls-cert", "", "PEM client certificate for mutual TLS, with --kafka-tls-key (implies --kafka-tls)")
	fs.StringVar(&c.KeyFile, "kafka-tls-key", "", "PEM private key of --kafka-tls-cert")
	fs.StringVar(&c.ServerName, "kafka-tls-server-name", "", "name to verify the brokers' certificates against (default: the host dialled)")
	fs.StringVar(&c.SASL, "kafka-sasl", "", "SASL mechanism: "+strings.Join(kafkaauth.Mechanisms, ", ")+" (default: none)")
	fs.StringVar(&c.User, "kafka-sasl-user", "", "SASL user")
	fs.StringVar(&c.Password, "kafka-sasl-password", "", "SASL password (prefer "+PasswordVar+": ps shows flags; never logged)")
}

// KafkaPassword fills c.Password from getenv(PasswordVar) when no flag set
// it, for a command that does not read every flag from the environment.
func KafkaPassword(c *kafkaauth.Config, getenv func(string) string) {
	if c.Password == "" {
		c.Password = getenv(PasswordVar)
	}
}

// RedisTLS registers --redis-tls-ca, --redis-tls-cert and --redis-tls-key.
func RedisTLS(fs *flag.FlagSet, ca, cert, key *string) {
	fs.StringVar(ca, "redis-tls-ca", "", "PEM file of the CA that signed Redis's certificate (implies --redis-tls)")
	fs.StringVar(cert, "redis-tls-cert", "", "PEM client certificate for mutual TLS with Redis, with --redis-tls-key (implies --redis-tls)")
	fs.StringVar(key, "redis-tls-key", "", "PEM private key of --redis-tls-cert")
}
