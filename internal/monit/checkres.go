package monit

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// SystemInfo is what the last cycle saw of the machine (monit's system
// service).
type SystemInfo struct {
	Load                        [3]float64
	CPUUser, CPUSystem, CPUWait float64 // percent of all CPUs since the cycle before
	MemKB                       int64   // used: total - free - buffers - cached
	MemPct                      float64
	SwapKB                      int64
	SwapPct                     float64
}

// cpuSample is a process's CPU time at a moment, for the next cycle's
// percentages.
type cpuSample struct {
	at          time.Time
	own, tree   uint64
	initialized bool
}

// userHZ is the unit of /proc's CPU times on Linux.
const userHZ = 100

// sampleCPU turns the process's CPU time since the cycle before into
// percentages of the machine, as monit reckons them (one process at most
// one CPU's share: 100% divided by the CPUs).
func (e *Engine) sampleCPU(st *svcState, us UnitStatus) {
	now := time.Now()
	prev := st.cpu
	st.cpu = cpuSample{at: now, own: us.CPUTicks, tree: us.CPUTicksTotal, initialized: true}
	if !prev.initialized || us.CPUTicks < prev.own || us.CPUTicksTotal < prev.tree {
		return
	}
	elapsed := now.Sub(prev.at).Seconds() * userHZ
	if elapsed <= 0 {
		return
	}
	ncpu := float64(runtime.NumCPU())
	pct := func(d uint64, cap float64) float64 {
		v := float64(int(1000*float64(d)/elapsed/ncpu)) / 10
		return min(v, cap)
	}
	e.mu.Lock()
	st.cpuPct, st.cpuKnown = [2]float64{pct(us.CPUTicks-prev.own, 100/ncpu), pct(us.CPUTicksTotal-prev.tree, 100)}, true
	e.mu.Unlock()
}

// systemSampler reads the machine's figures once per cycle, when a test
// or the system service needs them.
type systemSampler struct {
	info *SystemInfo
	err  error
}

func (s *systemSampler) get(e *Engine) (*SystemInfo, error) {
	if s.info == nil && s.err == nil {
		s.info, s.err = e.readSystem()
	}
	return s.info, s.err
}

// readSystem reads the load, memory, swap and CPU figures from /proc;
// CPU percentages are since the engine's previous reading.
func (e *Engine) readSystem() (*SystemInfo, error) {
	si := &SystemInfo{}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		for i := 0; i < 3 && i < len(f); i++ {
			si.Load[i], _ = strconv.ParseFloat(f[i], 64)
		}
	} else {
		return nil, fmt.Errorf("read load: %w", err)
	}
	mem, err := meminfo()
	if err != nil {
		return nil, err
	}
	if total := mem["MemTotal"]; total > 0 {
		si.MemKB = total - mem["MemFree"] - mem["Buffers"] - mem["Cached"]
		si.MemPct = float64(int(1000*float64(si.MemKB)/float64(total))) / 10
	}
	if total := mem["SwapTotal"]; total > 0 {
		si.SwapKB = total - mem["SwapFree"]
		si.SwapPct = float64(int(1000*float64(si.SwapKB)/float64(total))) / 10
	}
	if cur, err := readCPUTimes(); err == nil {
		e.mu.Lock()
		prev := e.sysCPU
		e.sysCPU = cur
		e.mu.Unlock()
		if d := cur.total - prev.total; prev.total > 0 && d > 0 {
			pct := func(a, b uint64) float64 { return float64(int(1000*float64(a-b)/float64(d))) / 10 }
			si.CPUUser, si.CPUSystem, si.CPUWait = pct(cur.user, prev.user), pct(cur.system, prev.system), pct(cur.wait, prev.wait)
		}
	}
	return si, nil
}

// meminfo reads /proc/meminfo in kilobytes.
func meminfo() (map[string]int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, fmt.Errorf("read memory: %w", err)
	}
	out := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if f := strings.Fields(v); ok && len(f) > 0 {
			out[k], _ = strconv.ParseInt(f[0], 10, 64)
		}
	}
	return out, nil
}

// cpuTimes are the machine's CPU times (/proc/stat's first line).
type cpuTimes struct{ user, system, wait, total uint64 }

func readCPUTimes() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read cpu times: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("read cpu times: unexpected %q", line)
	}
	v := make([]uint64, 7)
	for i := range v {
		v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
	}
	var c cpuTimes // user nice system idle iowait irq softirq
	c.user, c.system, c.wait = v[0]+v[1], v[2], v[4]
	for _, x := range v {
		c.total += x
	}
	return c, nil
}

// checkSystem runs a system service's resource tests and keeps the
// machine's figures for its status.
func (e *Engine) checkSystem(svc *monitrc.Service, st *svcState, sys *systemSampler) []posted {
	si, err := sys.get(e)
	if err != nil {
		return nil
	}
	e.mu.Lock()
	st.system = si
	e.mu.Unlock()
	var out []posted
	for _, i := range reversed(svc, monitrc.TestResource) {
		out = append(out, testResult(i, svc.Tests[i], resourceCheck(svc.Tests[i], nil, si)))
	}
	return out
}

// resourceCheck runs one resource test with monit's messages, on a
// process (us) or on the machine (us nil; si then holds its figures).
func resourceCheck(t monitrc.Test, us *UnitStatus, si *SystemInfo) checked {
	op, lim := t.Operator, t.Limit
	type figure struct {
		what    string
		v       float64
		percent bool
	}
	var f figure
	switch t.Resource {
	case "cpu":
		f = figure{"cpu usage", us.CPUPct, true}
	case "totalcpu":
		f = figure{"total cpu usage", us.CPUPctTotal, true}
	case "cpuuser", "cpusystem", "cpuwait":
		if si == nil {
			return checked{EventData, true, "cannot read the machine's cpu usage"}
		}
		word := strings.TrimPrefix(t.Resource, "cpu")
		v := map[string]float64{"user": si.CPUUser, "system": si.CPUSystem, "wait": si.CPUWait}[word]
		f = figure{"cpu " + word + " usage", v, true}
	case "memory", "totalmem":
		total := t.Resource == "totalmem"
		if us == nil && si == nil {
			return checked{EventData, true, "cannot read the machine's memory"}
		}
		switch {
		case us == nil && t.Percent:
			f = figure{"mem usage", si.MemPct, true}
		case us == nil:
			f = figure{"mem amount", float64(si.MemKB), false}
		case t.Percent && total:
			f = figure{"total mem amount", us.MemPctTotal, true}
		case t.Percent:
			f = figure{"mem usage", us.MemPct, true}
		case total:
			f = figure{"total mem amount", float64(us.MemKBTotal), false}
		default:
			f = figure{"mem amount", float64(us.MemKB), false}
		}
	case "swap":
		if si == nil {
			return checked{EventData, true, "cannot read the machine's swap"}
		}
		if t.Percent {
			f = figure{"swap usage", si.SwapPct, true}
		} else {
			f = figure{"swap amount", float64(si.SwapKB), false}
		}
	case "children":
		bad := compareNum(float64(us.Children), op, lim)
		return checked{EventResource, bad, pick(bad, fmt.Sprintf("children of %d matches resource limit [children%s%d]",
			us.Children, op, int64(lim)), fmt.Sprintf("children check succeeded [current children=%d]", us.Children))}
	case "loadavg1", "loadavg5", "loadavg15":
		if si == nil {
			return checked{EventData, true, "cannot read the load average"}
		}
		i := map[string]int{"loadavg1": 0, "loadavg5": 1, "loadavg15": 2}[t.Resource]
		what := "loadavg(" + strings.TrimPrefix(t.Resource, "loadavg") + "min)"
		bad := compareNum(si.Load[i], op, lim)
		return checked{EventResource, bad, pick(bad, fmt.Sprintf("%s of %.1f matches resource limit [%s%s%.1f]",
			what, si.Load[i], what, op, lim), fmt.Sprintf("%s check succeeded [current %s=%.1f]", what, what, si.Load[i]))}
	default:
		return checked{EventData, true, "unknown resource " + t.Resource}
	}
	bad := compareNum(f.v, op, lim)
	if f.percent {
		return checked{EventResource, bad, pick(bad, fmt.Sprintf("%s of %.1f%% matches resource limit [%s%s%.1f%%]",
			f.what, f.v, f.what, op, lim), fmt.Sprintf("%s check succeeded [current %s=%.1f%%]", f.what, f.what, f.v))}
	}
	return checked{EventResource, bad, pick(bad, fmt.Sprintf("%s of %dkB matches resource limit [%s%s%dkB]",
		f.what, int64(f.v), f.what, op, int64(lim)), fmt.Sprintf("%s check succeeded [current %s=%dkB]", f.what, f.what, int64(f.v)))}
}

// pidTests runs the pid and ppid change tests against the cycle before.
func (e *Engine) pidTests(svc *monitrc.Service, st *svcState, us UnitStatus) []posted {
	var out []posted
	for i, t := range svc.Tests {
		var was, is int
		var bit int
		var word string
		switch t.Kind {
		case monitrc.TestPID:
			was, is, bit, word = st.pid, us.PID, EventPID, "PID"
		case monitrc.TestPPID:
			was, is, bit, word = st.ppid, us.PPID, EventPPID, "PPID"
		default:
			continue
		}
		if was == 0 {
			continue
		}
		ch := was != is
		out = append(out, testResult(i, t, checked{bit, ch, pick(ch,
			fmt.Sprintf("process %s changed from %d to %d", word, was, is),
			fmt.Sprintf("process %s has not changed since last cycle", word))}))
	}
	st.pid, st.ppid = us.PID, us.PPID
	return out
}
