package procinit

import (
	"fmt"
	"time"

	"github.com/vigil-bosh/vigil/internal/jsonwire"
	"github.com/vigil-bosh/vigil/internal/sandbox"
)

// decodeLaunch decodes a launch as the daemon's encoding/json wrote it,
// without reflection: encoding/json's caches for the type were the most
// of what an init allocates in its life (about 85 KiB of private memory
// by BenchmarkInitIdleMemory). Unknown keys are skipped. Of the sandbox's
// spec it reads only what the init itself uses (readSandbox), and returns
// the spec's JSON as it is in line (nil without one), which the init
// passes on to the sandbox helper, which reads the rest: decoded whole and
// encoded again, the spec was half of what an isolated init allocated.
func decodeLaunch(line []byte) (l Launch, spec []byte, err error) {
	r := jsonwire.NewReader(line)
	if r.Null() {
		return l, nil, fmt.Errorf("launch: null")
	}
	r.Object(func(key string) {
		switch key {
		case "label":
			l.Label = r.String()
		case "path":
			l.Path = r.String()
		case "args":
			l.Args = r.Strings()
		case "env":
			l.Env = r.Strings()
		case "dir":
			l.Dir = r.String()
		case "stdout":
			l.Stdout = r.String()
		case "stderr":
			l.Stderr = r.String()
		case "pre_start":
			l.PreStart = r.String()
		case "hook_timeout":
			l.HookTimeout = time.Duration(r.Int())
		case "pid_file":
			l.PidFile = r.String()
		case "exit_file":
			l.ExitFile = r.String()
		case "sandbox":
			spec = r.Capture(func() { l.Sandbox = readSandbox(r) })
		case "init_caps":
			l.InitCaps = r.Ints()
		case "warnings":
			l.Warnings = r.Strings()
		case "notify_fd":
			l.NotifyFD = int(r.Int())
		case "logs":
			l.Logs = readLogRotation(r)
		case "timestamps":
			l.Timestamps = r.Bool()
		case "console":
			l.Console = r.String()
		default:
			r.Skip()
		}
	})
	if err := r.End(); err != nil {
		return Launch{}, nil, fmt.Errorf("launch: %w", err)
	}
	if l.Sandbox == nil {
		spec = nil // null
	}
	return l, spec, nil
}

// readSandbox reads the part of a sandbox's spec that the init uses
// itself, its cgroups (which it empties at the end) and whether the
// helper runs in the init's namespaces (host), and skips the rest.
func readSandbox(r *jsonwire.Reader) *sandbox.Spec {
	if r.Null() {
		return nil
	}
	s := &sandbox.Spec{}
	r.Object(func(key string) {
		switch key {
		case "cgroups":
			s.Cgroups = r.Strings()
		case "host":
			s.Host = r.Bool()
		default:
			r.Skip()
		}
	})
	return s
}

func readLogRotation(r *jsonwire.Reader) *LogRotation {
	if r.Null() {
		return nil
	}
	rot := &LogRotation{}
	r.Object(func(key string) {
		switch key {
		case "max_size":
			rot.MaxSize = r.Int()
		case "keep":
			rot.Keep = int(r.Int())
		default:
			r.Skip()
		}
	})
	return rot
}

// decodeCommand decodes one command line.
func decodeCommand(line []byte) (Command, error) {
	var c Command
	r := jsonwire.NewReader(line)
	if r.Null() {
		return c, fmt.Errorf("command: null")
	}
	r.Object(func(key string) {
		if key == "cmd" {
			c.Cmd = r.String()
		} else {
			r.Skip()
		}
	})
	if err := r.End(); err != nil {
		return Command{}, fmt.Errorf("command: %w", err)
	}
	return c, nil
}
