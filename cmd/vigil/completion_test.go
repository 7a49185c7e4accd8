package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// shellTest runs script in shell with the vigil binary on PATH and the
// test root as VIGIL_ROOT, and returns its output lines, sorted.
func shellTest(t *testing.T, c *cli, shell string, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath(shell); err != nil {
		t.Skipf("needs %s (apt-get install %s)", shell, shell)
	}
	cmd := exec.Command(shell, args...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(vigilBin)+":"+os.Getenv("PATH"), "VIGIL_ROOT="+c.root, "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", shell, err, out)
	}
	lines := strings.Fields(string(out))
	slices.Sort(lines)
	return lines
}

func script(t *testing.T, shell string) string {
	t.Helper()
	out, errs, code := runSplit(t, "completion", shell)
	if code != 0 {
		t.Fatalf("vigil completion %s: %d %s", shell, code, errs)
	}
	path := filepath.Join(t.TempDir(), "vigil."+shell)
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The completions each shell is asked for, and what it must offer: the
// commands, flags, the values of a flag, the root's jobs and a job's
// processes.
var shellCases = []struct {
	line string // ends with the word being completed ("" after a space)
	want []string
}{
	{"vigil st", []string{"start", "status", "stop"}},
	{"vigil start --wa", []string{"--wait"}},
	{"vigil start web --wait ", []string{"none", "ready", "running"}},
	{"vigil restart ", []string{"all", "web"}},
	{"vigil stop web -p ", []string{"a", "b"}},
	{"vigil --root /nowhere stop ", []string{"all"}}, // the root before the command is the one read
}

// TestBashCompletion loads the bash script and calls its function as
// bash's completion would.
func TestBashCompletion(t *testing.T) {
	c := newCLI(t)
	path := script(t, "bash")
	for _, sc := range shellCases {
		words := strings.Split(sc.line, " ")
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := "source " + path + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) +
			"\n_vigil\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		if got := shellTest(t, c, "bash", "-c", prog); !slices.Equal(got, sc.want) {
			t.Errorf("bash %q: %q, want %q", sc.line, got, sc.want)
		}
	}
	if got := shellTest(t, c, "bash", "-c", "source "+path+"\ncomplete -p vigil"); !slices.Contains(got, "_vigil") {
		t.Errorf("bash: no completion registered for vigil: %q", got)
	}
}

// TestFishCompletion asks fish itself (complete -C) what it would offer.
func TestFishCompletion(t *testing.T) {
	c := newCLI(t)
	path := script(t, "fish")
	for _, sc := range shellCases {
		got := shellTest(t, c, "fish", "--no-config", "-c", "source "+path+"; complete -C '"+sc.line+"'")
		if !slices.Equal(got, sc.want) {
			t.Errorf("fish %q: %q, want %q", sc.line, got, sc.want)
		}
	}
}

// TestZshCompletion runs the zsh function with compadd and compdef stood
// in by functions that print what they are given (the completion system
// itself needs a terminal).
func TestZshCompletion(t *testing.T) {
	c := newCLI(t)
	path := script(t, "zsh")
	if got := shellTest(t, c, "zsh", "-n", path); len(got) != 0 {
		t.Fatalf("zsh -n: %q", got)
	}
	for _, sc := range shellCases {
		words := strings.Split(sc.line, " ")
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := "compdef() { }\ncompadd() { [[ $1 == -a ]] && print -l -- ${(P)2} }\nsource " + path +
			"\nwords=(" + strings.Join(quoted, " ") + ")\nCURRENT=" + strconv.Itoa(len(words)) + "\n_vigil\n"
		got := shellTest(t, c, "zsh", "-f", "-c", prog)
		var kept []string // compadd gets every candidate; zsh matches the prefix itself
		for _, g := range got {
			if strings.HasPrefix(g, words[len(words)-1]) {
				kept = append(kept, g)
			}
		}
		if !slices.Equal(kept, sc.want) {
			t.Errorf("zsh %q: %q, want %q", sc.line, kept, sc.want)
		}
	}
}
