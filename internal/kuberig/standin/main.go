// Command standin plays the processes of the BOSH jobs the kubelet rig's
// scenarios run, where a shell loop cannot: an HTTP server that drains as
// gorouter does, and a cell that evacuates as diego's rep does. Every step
// is recorded, with the time since boot, in the file $RECORD (a directory
// the scenario shares with the host).
//
//	standin serve ADDR   # gorouter: GET /slow?s=N answers after N seconds,
//	                     # /health is 200 until USR1 (or TERM), which drains:
//	                     # /health turns 503, new connections are refused a
//	                     # second later, requests in flight finish, exit 0
//	standin evacuate     # rep: USR1 evacuates (2 s), then exit 0; TERM exits 0
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: standin serve ADDR | evacuate")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		serve(os.Args[2])
	case "evacuate":
		evacuate()
	default:
		fmt.Fprintln(os.Stderr, "standin: unknown mode", os.Args[1])
		os.Exit(2)
	}
}

// record appends "WHAT UPTIME" to $RECORD.
func record(what string) {
	up, _ := os.ReadFile("/proc/uptime")
	line := what + " " + strings.Fields(string(up) + " 0")[0] + "\n"
	fmt.Print(line)
	if path := os.Getenv("RECORD"); path != "" {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666); err == nil {
			f.WriteString(line)
			f.Close()
		}
	}
}

func serve(addr string) {
	var draining atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		s, _ := strconv.Atoi(r.URL.Query().Get("s"))
		record("request-began")
		time.Sleep(time.Duration(s) * time.Second) // the request's own work
		record("request-ended")
		fmt.Fprintln(w, "done")
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGTERM)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		if s := <-sig; s == syscall.SIGUSR1 {
			record("got-USR1")
		} else {
			record("got-TERM")
		}
		draining.Store(true)
		time.Sleep(time.Second) // gorouter's drain_wait: the load balancer sees /health fail
		srv.Shutdown(context.Background())
	}()
	record("serving")
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	<-drained // the requests in flight have finished
	record("drained-exit")
}

func evacuate() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGTERM)
	record("cell-up")
	if s := <-sig; s == syscall.SIGUSR1 {
		record("evacuating")
		time.Sleep(2 * time.Second) // the cell's containers move elsewhere
		record("evacuated-exit")
		return
	}
	record("got-TERM-exit")
}
