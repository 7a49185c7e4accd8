package control

import (
	"fmt"

	"github.com/vigil-bosh/vigil/internal/jsonwire"
)

// DecodeStatus decodes a status reply (GET /v1/status) as encoding/json
// decodes it into a Status, but without reflection: `vigil status` is a
// fresh process each time, and encoding/json's decoding of 100 processes
// was 29% of its CPU. Unknown keys are skipped, null is the zero Status,
// and any input gives a Status or an error, never a panic. It is stricter
// than encoding/json (jsonwire's rules) on what the daemon never writes: a
// key twice in one object is an error, and a key sets a field only when it
// is exactly the field's name (encoding/json ignores case).
func DecodeStatus(data []byte) (Status, error) {
	var st Status
	r := jsonwire.NewReader(data)
	r.ObjectBytes(func(key []byte) {
		switch string(key) {
		case "daemon":
			st.Daemon = readDaemon(r)
		case "processes":
			st.Processes = jsonwire.List(r, readProcess)
		case "problems":
			st.Problems = jsonwire.List(r, readProblem)
		default:
			r.Skip()
		}
	})
	if err := r.End(); err != nil {
		return Status{}, fmt.Errorf("status: %w", err)
	}
	return st, nil
}

func readDaemon(r *jsonwire.Reader) DaemonInfo {
	var d DaemonInfo
	r.ObjectBytes(func(key []byte) {
		switch string(key) {
		case "pid":
			d.PID = int(r.Int())
		case "version":
			d.Version = r.String()
		case "root":
			d.Root = r.String()
		case "backend":
			d.Backend = r.String()
		case "started":
			d.Started = r.Time()
		case "drain":
			d.Drain = jsonwire.Pointer(r, readDrain)
		default:
			r.Skip()
		}
	})
	return d
}

func readDrain(r *jsonwire.Reader) DrainState {
	var d DrainState
	r.ObjectBytes(func(key []byte) {
		switch string(key) {
		case "state":
			d.State = r.String()
		case "by":
			d.By = r.String()
		case "began":
			d.Began = r.Time()
		case "ended":
			d.Ended = jsonwire.Pointer(r, (*jsonwire.Reader).Time)
		case "error":
			d.Error = r.String()
		default:
			r.Skip()
		}
	})
	return d
}

func readProcess(r *jsonwire.Reader) ProcessStatus {
	var p ProcessStatus
	r.ObjectBytes(func(key []byte) {
		switch string(key) {
		case "job":
			p.Job = r.String()
		case "process":
			p.Process = r.String()
		case "state":
			p.State = r.String()
		case "wanted":
			p.Wanted = r.String()
		case "unmonitored":
			p.Unmonitored = r.Bool()
		case "pid":
			p.PID = int(r.Int())
		case "exec_pid":
			p.ExecPID = int(r.Int())
		case "restarts":
			p.Restarts = int(r.Int())
		case "since":
			p.Since = r.Time()
		case "last_exit":
			p.LastExit = jsonwire.Pointer(r, readExit)
		case "stop":
			p.Stop = jsonwire.Pointer(r, readStop)
		case "warnings":
			p.Warnings = r.Strings()
		case "health":
			p.Health = r.String()
		case "ready":
			p.Ready = r.Bool()
		case "probes":
			p.Probes = jsonwire.List(r, readProbe)
		case "usage":
			p.Usage = jsonwire.Pointer(r, readUsage)
		case "output":
			p.Output = readOutput(r)
		case "retry_at":
			p.RetryAt = r.Time()
		case "memory_limit_bytes":
			p.MemoryLimitBytes = r.Int()
		case "isolation":
			p.Isolation = r.String()
		default:
			r.Skip()
		}
	})
	return p
}

func readExit(r *jsonwire.Reader) Exit {
	var e Exit
	r.ObjectBytes(func(key []byte) {
		switch string(key) {
		case "code":
			e.Code = int(r.Int())
		case "signal":
			e.Signal = r.String()
		case "oom":
			e.OOM = r.Bool()
		case "error":
			e.Error = r.String()
		case "at":
			e.At = r.Time()
		case "description":
			e.Description = r.String()
		case "stop_step":
			e.StopStep = r.String()
		case "stopped_by":
			e.StoppedBy = r.String()
		case "stop_seconds":
			e.StopSeconds = r.Float()
		default:
			r.Skip()
		}
	})
	return e
}

func readStop(r *jsonwire.Reader) StopProgress {
	var s StopProgress
	r.ObjectBytes(func(key []byte) {
		switch string(key) {
		case "step":
			s.Step = r.String()
		case "signal":
			s.Signal = r.String()
		case "began":
			s.Began = r.Time()
		case "step_at":
			s.StepAt = r.Time()
		default:
			r.Skip()
		}
	})
	return s
}

func readProbe(r *jsonwire.Reader) ProbeResult {
	var p ProbeResult
	r.ObjectBytes(func(key []byte) {
		switch string(key) {
		case "role":
			p.Role = r.String()
		case "ok":
			p.OK = r.Bool()
		case "latency_ms":
			p.LatencyMS = r.Float()
		case "message":
			p.Message = r.String()
		case "at":
			p.At = r.Time()
		case "consecutive_failures":
			p.Failures = int(r.Int())
		default:
			r.Skip()
		}
	})
	return p
}

func readUsage(r *jsonwire.Reader) Usage {
	var u Usage
	r.ObjectBytes(func(key []byte) {
		switch string(key) {
		case "cpu_seconds":
			u.CPUSeconds = r.Float()
		case "rss_bytes":
			u.RSSBytes = r.Int()
		case "open_fds":
			u.OpenFDs = int(r.Int())
		case "processes":
			u.Processes = int(r.Int())
		default:
			r.Skip()
		}
	})
	return u
}

func readOutput(r *jsonwire.Reader) Output {
	var o Output
	r.ObjectBytes(func(key []byte) {
		switch string(key) {
		case "dropped_stdout_bytes":
			o.DroppedStdout = r.Int()
		case "dropped_stderr_bytes":
			o.DroppedStderr = r.Int()
		case "rotation_failures":
			o.RotationFailures = r.Int()
		default:
			r.Skip()
		}
	})
	return o
}

func readProblem(r *jsonwire.Reader) Problem {
	var p Problem
	r.ObjectBytes(func(key []byte) {
		switch string(key) {
		case "severity":
			p.Severity = r.String()
		case "job":
			p.Job = r.String()
		case "process":
			p.Process = r.String()
		case "kind":
			p.Kind = r.String()
		case "file":
			p.File = r.String()
		case "line":
			p.Line = int(r.Int())
		case "field":
			p.Field = r.String()
		case "message":
			p.Message = r.String()
		default:
			r.Skip()
		}
	})
	return p
}
