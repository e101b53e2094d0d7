// Package kafkaauth says how delayq's Kafka connections are secured: TLS
// (with a CA file, an optional client certificate for mutual TLS and an
// optional server name) and SASL (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512),
// the same way for every connection of delayd, delayctl, the load tool,
// the console and the Go client.
//
// The --kafka-tls* and --kafka-sasl* flags fill a Config; Config.Load
// reads its files once and returns an Auth, which every caller asks for
// what kafka-go needs: Auth.Transport for a kafka.Client or kafka.Writer,
// Auth.Dialer for a kafka.Reader, a consumer group or a kafka.Conn. A nil
// *Auth is a plaintext connection (kafka-go's default transport), so a
// caller that was given none connects as before.
//
// # Failures
//
// kafka-go reports a refused login as kafka.SASLAuthenticationFailed (or
// an EOF, which it turns into that), a broker that does not offer the
// mechanism as kafka.UnsupportedSASLMechanism, and TLS problems as the
// crypto/tls and crypto/x509 errors of the handshake, often several
// wrappings deep. Auth.Explain turns those into one line that names the
// cause ("kafka: SASL authentication failed for user \"x\"", "kafka: TLS
// handshake: certificate signed by unknown authority") and keeps the
// original error wrapped. A kafka-go transport that never got the
// cluster's metadata answers every other request with BrokerNotAvailable;
// Auth.Diagnose asks for the metadata to find the cause behind it. None of
// them is a reason to give up: delayd keeps retrying, as for any outage,
// and says why on /readyz.
//
// A broker may also close the connection instead of answering a refused
// login (kfake does; Apache Kafka answers SASL_AUTHENTICATION_FAILED
// first), or because the client's TLS or SASL does not match its
// listener: Explain turns such an EOF into a line that says both.
//
// # Secrets
//
// Config.String and Config.LogValue show whether a password is set, never
// the password; pass it through DELAYQ_KAFKA_SASL_PASSWORD rather than on
// the command line, where ps shows it.
package kafkaauth
