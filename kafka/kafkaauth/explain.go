package kafkaauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/segmentio/kafka-go"
)

// Error is a connection failure that Explain recognized: the broker
// refused the login, or TLS failed. Its message is the cause alone, one
// line; Unwrap gives kafka-go's error.
type Error struct {
	Cause string // "kafka: SASL authentication failed for user \"x\" (SCRAM-SHA-512)"
	Err   error
}

func (e *Error) Error() string { return e.Cause }
func (e *Error) Unwrap() error { return e.Err }

// Explain returns err as an *Error naming the cause when it is a SASL or
// TLS failure of a connection a made, and err itself otherwise (nil for
// nil, an *Error as it is).
func (a *Auth) Explain(err error) error {
	if err == nil {
		return nil
	}
	if e := (*Error)(nil); errors.As(err, &e) {
		return err
	}
	if cause := a.cause(err); cause != "" {
		return &Error{Cause: cause, Err: err}
	}
	return err
}

// Diagnose is Explain for the error of a request c sent through a's
// transport. The transport answers any request but Metadata with
// BrokerNotAvailable while it never got the cluster's metadata, which
// hides why (a refused login, a failed TLS handshake): for an error
// Explain does not recognize, Diagnose asks c for the metadata and
// returns that error when Explain recognizes it, else err.
func (a *Auth) Diagnose(ctx context.Context, c *kafka.Client, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	if e := a.Explain(err); e != err {
		return e
	}
	_, merr := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if e := a.Explain(merr); e != merr {
		return e
	}
	return err
}

// cause is the one-line cause of err, or "" when err is no failure of TLS
// or SASL.
func (a *Auth) cause(err error) string {
	var werrs kafka.WriteErrors // a Writer's answer, message by message
	if errors.As(err, &werrs) {
		for _, e := range werrs {
			if c := a.cause(e); e != nil && c != "" {
				return c
			}
		}
	}
	mech, user := "SASL", ""
	if m := a.SASL(); m != nil {
		mech, user = m.Name(), a.user
	}
	switch {
	case errors.Is(err, kafka.SASLAuthenticationFailed) && user == "":
		return fmt.Sprintf("kafka: SASL authentication failed (%s): wrong user or password, or the broker does not know the user", mech)
	case errors.Is(err, kafka.SASLAuthenticationFailed):
		return fmt.Sprintf("kafka: SASL authentication failed for user %q (%s): wrong user or password, or the broker does not know the user", user, mech)
	case errors.Is(err, kafka.UnsupportedSASLMechanism):
		return fmt.Sprintf("kafka: SASL mechanism %s is not enabled on the broker's listener", mech)
	case errors.Is(err, kafka.IllegalSASLState):
		return "kafka: the broker refused the SASL handshake (is its listener SASL_PLAINTEXT or SASL_SSL?)"
	}
	if tlsCause := tlsCause(err, a.TLS()); tlsCause != "" {
		return "kafka: TLS handshake: " + tlsCause
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// A broker closes the connection on a client whose TLS or SASL
		// does not match the listener, and some (not Apache Kafka, which
		// answers SASL_AUTHENTICATION_FAILED first) on a refused login.
		return fmt.Sprintf("kafka: the broker closed the connection (%v): a listener with other TLS or SASL settings than these (%s), or a refused login, does that",
			err, a.describe())
	}
	return ""
}

// describe is a's TLS and SASL for people: "TLS on, SASL SCRAM-SHA-512
// as user \"x\"".
func (a *Auth) describe() string {
	tlsOn, sasl := "off", "off"
	if a.TLS() != nil {
		tlsOn = "on"
	}
	if m := a.SASL(); m != nil && a.user != "" {
		sasl = fmt.Sprintf("%s as user %q", m.Name(), a.user)
	} else if m != nil {
		sasl = m.Name()
	}
	return "TLS " + tlsOn + ", SASL " + sasl
}

// tlsCause is why a TLS handshake failed, or "".
func tlsCause(err error, cfg *tls.Config) string {
	var (
		unknown  x509.UnknownAuthorityError
		host     x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		op       *net.OpError
		trimX509 = func(e error) string { return strings.TrimPrefix(e.Error(), "x509: ") }
	)
	switch {
	case errors.As(err, &unknown):
		return "certificate signed by unknown authority (is the CA file the one that signed the broker's certificate?)"
	case errors.As(err, &host):
		return trimX509(host) + " (set the server name the certificate was issued for)"
	case errors.As(err, &invalid):
		return trimX509(invalid)
	case errors.As(err, &verify):
		return trimX509(verify.Err)
	case errors.As(err, &record):
		return "the broker did not answer with TLS (is its listener plaintext?)"
	case cfg != nil && errors.As(err, &op) && op.Op == "remote error":
		// The broker sent a TLS alert. With TLS 1.3 a refused client
		// certificate shows up only now, at the first read after the
		// handshake.
		if len(cfg.Certificates) == 0 {
			return fmt.Sprintf("the broker refused the connection (%v): does it require a client certificate?", op)
		}
		return fmt.Sprintf("the broker refused the connection (%v): is the client certificate signed by a CA it trusts?", op)
	}
	return ""
}
