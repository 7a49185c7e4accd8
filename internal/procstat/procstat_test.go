package procstat

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	page := int64(os.Getpagesize())
	for _, c := range []struct {
		line string
		want Stat
		bad  bool
	}{
		{line: "42 (sh) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 20 10 20 0 1 0 100 2000 5 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0",
			want: Stat{PID: 42, PPID: 1, Group: 42, Session: 42, State: 'S', CPUTicks: 10, ChildTicks: 30, StartTicks: 100, RSSBytes: 5 * page, VSizeBytes: 2000}},
		{line: "7 (a) b) (c) R 3 7 7 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 100 2000 9 0\n",
			want: Stat{PID: 7, PPID: 3, Group: 7, Session: 7, State: 'R', CPUTicks: 2, StartTicks: 100, RSSBytes: 9 * page, VSizeBytes: 2000}},
		{line: "7 no name", bad: true},
		{line: "x (a) R 1", bad: true},
		{line: "7 (a) R 1 2 3", bad: true},
	} {
		got, err := parseStat([]byte(c.line))
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v (error: %v)", c.line, got, err, c.want, c.bad)
		}
	}
	// A pass over the machine parses a line per process: none may allocate.
	line := []byte("42 (sh) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 20 10 20 0 1 0 100 2000 5 18446744073709551615 1 1 0")
	if n := testing.AllocsPerRun(100, func() { parseStat(line) }); n != 0 {
		t.Errorf("parseStat allocates %v times per line", n)
	}
}

// startCat starts a cat that blocks on its stdin until the test ends.
func startCat(t *testing.T) int {
	cmd := exec.Command("cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil { // returns once cat has been exec'd
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	// Its echo of a line says that cat is in its read loop: its dynamic
	// loader, which opens libraries for a moment, is done.
	echo := make([]byte, 2)
	if _, err := in.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(out, echo); err != nil || string(echo) != "x\n" {
		t.Fatalf("cat echoed %q (%v)", echo, err)
	}
	return cmd.Process.Pid
}

func TestTreeAndDescendants(t *testing.T) {
	a, b := startCat(t), startCat(t)
	self := os.Getpid()
	below := Descendants(self)
	if !slices.Contains(below, a) || !slices.Contains(below, b) {
		t.Fatalf("descendants of %d: %v, want %d and %d", self, below, a, b)
	}
	// Burn CPU until the kernel has counted a tick of it.
	for {
		if st, err := ReadStat(self); err != nil || st.CPUTicks > 0 {
			break
		}
	}
	snap, err := Scan()
	if err != nil {
		t.Fatal(err)
	}
	if kids := snap.Children(self); !slices.Contains(kids, a) || !slices.Contains(kids, b) {
		t.Fatalf("children at the scan: %v", kids)
	}
	one := snap.Tree(a)
	if one.Processes != 1 || one.RSSBytes <= 0 {
		t.Fatalf("cat's tree: %+v", one)
	}
	all := snap.Tree(self)
	if all.Processes < 3 || all.RSSBytes < 2*one.RSSBytes || all.CPUSeconds <= 0 {
		t.Fatalf("own tree: %+v (one cat: %+v)", all, one)
	}
	if st, ok := snap.Stat(a); !ok || st.PPID != self {
		t.Fatalf("cat's stat: %+v %v", st, ok)
	}
	if u := snap.Tree(1 << 30); u != (Usage{}) {
		t.Fatalf("a pid that does not exist uses %+v", u)
	}
	if got := one.Add(one); got.Processes != 2 || got.RSSBytes != 2*one.RSSBytes {
		t.Fatalf("Add: %+v", got)
	}
}

// TestOpenFDs counts a cat's descriptors (0, 1, 2 and whatever the test
// itself inherited) as a listing of its fd directory does, and sees three
// more files opened by the test.
func TestOpenFDs(t *testing.T) {
	cat := startCat(t)
	names, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cat))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := OpenFDs(cat); err != nil || n != len(names) || n < 3 {
		t.Fatalf("cat has %d descriptors open (%v), its fd directory lists %d", n, err, len(names))
	}
	before, err := OpenFDs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		f, err := os.Open("/dev/null")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	if after, err := OpenFDs(os.Getpid()); err != nil || after != before+3 {
		t.Fatalf("%d descriptors open after opening 3 more than %d (%v)", after, before, err)
	}
	if _, err := OpenFDs(1 << 30); err == nil {
		t.Fatal("no error for a pid that does not exist")
	}
}

func TestMemoryFigures(t *testing.T) {
	total, err := MemTotal()
	if err != nil || total <= 0 {
		t.Fatalf("MemTotal = %d, %v", total, err)
	}
	rss, err := RSS(os.Getpid())
	if err != nil || rss <= 0 || rss >= total {
		t.Fatalf("RSS = %d, %v", rss, err)
	}
}

// BenchmarkScan measures one pass over every process of the machine.
func BenchmarkScan(b *testing.B) {
	for b.Loop() {
		if _, err := Scan(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBootTime(t *testing.T) {
	for _, c := range []struct {
		stat string
		want int64
		bad  bool
	}{
		{stat: "cpu  1 2 3\ncpu0 1 2 3\nintr 5 0 0\nctxt 9\nbtime 1796170000\nprocesses 7\n", want: 1796170000},
		{stat: "cpu  1 2 3\nbtime x\n", bad: true},
		{stat: "cpu  1 2 3\nbtimes 5\n", bad: true},
	} {
		got, err := parseBootTime(c.stat)
		if (err != nil) != c.bad || !c.bad && got.Unix() != c.want {
			t.Errorf("parseBootTime(%q) = %v, %v; want %d (error: %v)", c.stat, got, err, c.want, c.bad)
		}
	}
	boot, err := BootTime()
	if err != nil {
		t.Fatal(err)
	}
	st, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// This process started after the boot and before now (btime is whole seconds).
	if started := st.Started(boot); started.Before(boot) || started.After(time.Now().Add(time.Second)) {
		t.Errorf("started %v, booted %v", started, boot)
	}
}

// FuzzParseStat writes stat lines as the kernel does, with any command
// name (the one field a process chooses: up to 15 bytes, spaces and
// parentheses included), and checks that parseStat reads back every
// figure; then it feeds the raw bytes, which must not panic.
func FuzzParseStat(f *testing.F) {
	f.Add("sh", uint32(42), uint32(1), uint64(7), uint64(3), uint64(5), []byte("1 (a) R"))
	f.Add("a) b) (c", uint32(7), uint32(3), uint64(1), uint64(1), uint64(9), []byte("7 (a)) R 1 2 3"))
	f.Fuzz(func(t *testing.T, comm string, pid, ppid uint32, utime, stime, rss uint64, raw []byte) {
		parseStat(raw)
		comm = strings.ReplaceAll(comm, "\x00", "")
		if len(comm) > 15 {
			comm = comm[:15]
		}
		utime, stime, rss = utime>>2, stime>>2, rss>>20 // sums and page multiples stay in range
		line := fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 100 0 0 0 %d %d 0 0 20 0 1 0 100 2000 %d 0 1 1\n",
			pid, comm, ppid, pid, pid, utime, stime, rss)
		got, err := parseStat([]byte(line))
		want := Stat{PID: int(pid), PPID: int(ppid), Group: int(pid), Session: int(pid), State: 'S', CPUTicks: utime + stime,
			StartTicks: 100, VSizeBytes: 2000, RSSBytes: int64(rss) * int64(os.Getpagesize())}
		if err != nil || got != want {
			t.Fatalf("parseStat(%q) = %+v, %v; want %+v", line, got, err, want)
		}
	})
}

// TestUserIDsAndGroups: a process's user ids as the kernel keeps them,
// and the members of its process group.
func TestUserIDsAndGroups(t *testing.T) {
	ids, err := UserIDs(os.Getpid())
	if err != nil || ids.Real != uint32(os.Getuid()) || ids.Effective != uint32(os.Geteuid()) {
		t.Fatalf("%+v %v", ids, err)
	}
	snap, err := Scan()
	if err != nil {
		t.Fatal(err)
	}
	pgid := syscall.Getpgrp()
	if !slices.Contains(snap.InGroup(pgid), os.Getpid()) {
		t.Fatalf("%d not in its group %d", os.Getpid(), pgid)
	}
}
