package web

import (
	"context"
	"fmt"
	"net"
)

// Page is a status page ready to serve: its server, the listener it
// serves on, and where its credentials came from.
type Page struct {
	Server          *Server
	Listener        net.Listener
	CredentialsFile string
	Generated       bool // the credentials were generated just now
}

// Open prepares a page for cfg on addr: it reads the credentials from
// credentialsFile, or, when that is empty, from the generated file of
// cfg.Layout (GeneratedCredentialsPath, made by EnsureCredentials); then
// builds the server and listens (see Listen). Nothing is served until
// Serve.
func Open(cfg Config, addr string, allowRemote bool, credentialsFile string) (*Page, error) {
	p := &Page{CredentialsFile: credentialsFile}
	var err error
	if credentialsFile != "" {
		cfg.Credentials, err = ReadCredentials(credentialsFile)
	} else {
		var reused bool
		p.CredentialsFile = GeneratedCredentialsPath(cfg.Layout)
		cfg.Credentials, reused, err = EnsureCredentials(p.CredentialsFile)
		p.Generated = !reused
	}
	if err != nil {
		return nil, fmt.Errorf("status page: %w", err)
	}
	if p.Server, err = New(cfg); err != nil {
		return nil, err
	}
	if p.Listener, err = Listen(addr, allowRemote); err != nil {
		return nil, err
	}
	return p, nil
}

// URL is the page's address.
func (p *Page) URL() string { return "http://" + p.Listener.Addr().String() + "/" }

// Serve serves the page until ctx is done (see Server.Serve).
func (p *Page) Serve(ctx context.Context) error { return p.Server.Serve(ctx, p.Listener) }
