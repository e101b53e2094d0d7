package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Files are the PEM files of a TLS client. All are optional; CertFile and
// KeyFile go together.
type Files struct {
	CA   string // CA certificates that verify the server; "": the system roots
	Cert string // client certificate (mutual TLS)
	Key  string // its private key
}

// Validate reports a certificate without a key or a key without a
// certificate; it does not read the files (Load does).
func (f Files) Validate() error {
	if (f.Cert == "") != (f.Key == "") {
		return fmt.Errorf("a client certificate needs both the certificate and the key file (cert %q, key %q)", f.Cert, f.Key)
	}
	return nil
}

// Load returns a client TLS configuration (TLS 1.2 or newer) with the CA
// and the client certificate of f, and serverName as the name to verify
// ("": the host dialled).
func (f Files) Load(serverName string) (*tls.Config, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, errors.New("CA file " + f.CA + ": no PEM certificate in it")
		}
	}
	if f.Cert != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
