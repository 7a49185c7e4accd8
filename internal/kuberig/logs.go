package kuberig

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// KubeletEvent is one line of the kubelet's log about a pod: its time,
// message and fields (containerName, gracePeriod, ...).
type KubeletEvent struct {
	Time   time.Time
	Msg    string
	Fields map[string]string
}

// klogLine is a klog line: level, month and day, time, thread, source,
// then a quoted message and key=value fields.
var (
	klogLine  = regexp.MustCompile(`(?s)^[IWEF](\d{4} \d\d:\d\d:\d\d\.\d{6})\s+\d+ \S+\] "((?:[^"\\]|\\.)*)"(.*)$`)
	klogField = regexp.MustCompile(`(\w+)=(?:"((?:[^"\\]|\\.)*)"|<\n((?s:.*?))\n >|(\S+))`)
)

// KubeletEvents returns the kubelet's log lines about the static pod
// name, in order.
func (r *Rig) KubeletEvents(pod string) ([]KubeletEvent, error) {
	f, err := os.Open(r.Log("kubelet.log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	want := `"default/` + pod + "-" + nodeName + `"`
	year := time.Now().Year()
	var out []KubeletEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		// A value of many lines is klog's key=< then its lines, each
		// indented with a tab, then " >" and the other fields.
		for strings.HasSuffix(line, "=<") && sc.Scan() {
			for l := sc.Text(); ; l = sc.Text() {
				line += "\n" + l
				if strings.HasPrefix(l, " >") || !sc.Scan() {
					break
				}
			}
		}
		if !strings.Contains(line, want) {
			continue
		}
		m := klogLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.Parse("2006 0102 15:04:05.000000", strconv.Itoa(year)+" "+m[1])
		if err != nil {
			continue
		}
		ev := KubeletEvent{Time: at, Msg: m[2], Fields: map[string]string{}}
		for _, f := range klogField.FindAllStringSubmatch(m[3], -1) {
			ev.Fields[f[1]] = f[2] + strings.TrimPrefix(strings.ReplaceAll(f[3], "\n\t", "\n"), "\t") + f[4]
		}
		out = append(out, ev)
	}
	return out, sc.Err()
}

// PodLogs keeps what a pod's containers wrote (kubectl logs) while the
// kubelet still has it: it removes the files with the pod.
type PodLogs struct {
	glob string
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	offsets map[string]int64
	text    map[string]*strings.Builder // by container
}

// FollowLogs copies the log files of the static pod's containers (every
// restart of each) as they grow, reading them every 200 ms, until Stop.
func (r *Rig) FollowLogs(pod string) *PodLogs {
	l := &PodLogs{glob: filepath.Join(r.dir, "log", "pods", "default_"+pod+"-"+nodeName+"_*", "*", "*.log"),
		stop: make(chan struct{}), done: make(chan struct{}), offsets: map[string]int64{}, text: map[string]*strings.Builder{}}
	go func() {
		defer close(l.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			l.read()
			select {
			case <-l.stop:
				l.read()
				return
			case <-t.C:
			}
		}
	}()
	return l
}

// read copies what the files gained since the last read, each line
// without the CRI's time, stream and tag.
func (l *PodLogs) read() {
	files, _ := filepath.Glob(l.glob)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if _, err := f.Seek(l.offsets[path], io.SeekStart); err == nil {
			b, _ := io.ReadAll(f)
			if i := strings.LastIndexByte(string(b), '\n'); i >= 0 {
				b = b[:i+1]
				l.offsets[path] += int64(len(b))
				c := filepath.Base(filepath.Dir(path))
				if l.text[c] == nil {
					l.text[c] = &strings.Builder{}
				}
				for _, line := range strings.SplitAfter(string(b), "\n") {
					if f := strings.SplitN(line, " ", 4); len(f) == 4 {
						l.text[c].WriteString(f[3])
					}
				}
			}
		}
		f.Close()
	}
}

// Stop stops following, after a last read.
func (l *PodLogs) Stop() {
	select {
	case <-l.done:
	default:
		close(l.stop)
		<-l.done
	}
}

// Container returns what the container wrote so far, every restart's.
func (l *PodLogs) Container(name string) string {
	l.read()
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.text[name]; b != nil {
		return b.String()
	}
	return ""
}
