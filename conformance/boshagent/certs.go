//go:build conformance

package boshagent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// MbusCert is what the settings' env.bosh.mbus.cert holds: a CA and the
// agent's certificate and key, PEM.
type MbusCert struct {
	CA          string `json:"ca"`
	Certificate string `json:"certificate"`
	PrivateKey  string `json:"private_key"`
}

// NewMbusCert makes a throwaway CA and a server certificate for the
// agent's mbus, valid for localhost and ips, as a director's variables
// would.
func NewMbusCert(ips ...string) (MbusCert, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return MbusCert{}, fmt.Errorf("mbus ca key: %w", err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vigil conformance mbus CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return MbusCert{}, fmt.Errorf("mbus ca: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return MbusCert{}, fmt.Errorf("mbus key: %w", err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "mbus"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, ip := range append([]string{"127.0.0.1"}, ips...) {
		leaf.IPAddresses = append(leaf.IPAddresses, net.ParseIP(ip))
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return MbusCert{}, fmt.Errorf("mbus certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return MbusCert{}, fmt.Errorf("mbus key: %w", err)
	}
	enc := func(typ string, b []byte) string { return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b})) }
	return MbusCert{CA: enc("CERTIFICATE", caDER), Certificate: enc("CERTIFICATE", leafDER),
		PrivateKey: enc("PRIVATE KEY", keyDER)}, nil
}

func certPool(ca []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("mbus ca: no certificate in the PEM")
	}
	return pool, nil
}
