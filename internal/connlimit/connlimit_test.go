package connlimit

import (
	"errors"
	"net"
	"testing"
)

// TestBound: with a bound of 3 and four clients connected, three are
// accepted and every slot is taken, so the fourth Accept waits (the
// client waits in the kernel's backlog); closing one of the three (twice:
// the second gives back nothing) lets exactly the fourth in. Close ends
// an Accept waiting for a slot.
func TestBound(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Listener(inner, 3)
	for range 4 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	var held []net.Conn
	for range 3 {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	if n := len(ln.(*listener).slots); n != 3 {
		t.Fatalf("%d slots taken by 3 open connections", n)
	}
	accepted := make(chan net.Conn)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	held[0].Close()
	held[0].Close()
	fourth := <-accepted
	if n := len(ln.(*listener).slots); n != 3 {
		t.Fatalf("%d slots taken by 3 open connections after a double close", n)
	}
	fourth.Close()
	for _, c := range held[1:] {
		c.Close()
	}
	if n := len(ln.(*listener).slots); n != 0 {
		t.Fatalf("%d slots taken with every connection closed", n)
	}
	for range 3 { // take every slot again, so the next Accept waits for one
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c, err = ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	done := make(chan error)
	go func() { _, err := ln.Accept(); done <- err }()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
}
