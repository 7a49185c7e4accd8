package web

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// chromium finds a Chromium to drive ($VIGIL_CHROMIUM, else on PATH), or
// skips the test.
func chromium(t *testing.T) string {
	if p := os.Getenv("VIGIL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH (Debian: apt-get install chromium; or set VIGIL_CHROMIUM): the browser test needs one")
	return ""
}

// TestBrowserStopsAProcess drives headless Chromium against a real daemon:
// it signs in through the basic-auth challenge, sees the page go live,
// clicks stop on a process and sees the page show it stopped through the
// event stream (no reload), and checks the daemon agrees. Screenshots of a
// wide and a phone-sized screen go to the test's artifact directory (kept
// with go test -artifacts).
func TestBrowserStopsAProcess(t *testing.T) {
	exe := chromium(t)
	ld := startDaemon(t)
	_, ts := serve(t, ld.d, ld.layout)
	ctx, challenges := browse(t, exe)

	server := `tr.proc[data-job="app"][data-process="server"]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(server+`[data-state="running"]`),
		chromedp.WaitVisible(`#live.on`), // the script ran and the event stream is open
	); err != nil {
		t.Fatal(err)
	}
	if challenges.Load() == 0 {
		t.Fatal("the page loaded without an authentication challenge")
	}
	shoot(t, ctx, "wide.png")

	// The warning every process has is said once, for every process, not
	// on each; the configuration's problems, folded by the reader, stay
	// folded across the live updates.
	problems := `details.problems`
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(problems+`[open] li.shared`),
		click(problems+` summary`),
		chromedp.WaitVisible(problems+`:not([open]) .summary`),
		click(server+` button[value="stop"]`),
		chromedp.WaitVisible(server+`[data-state="stopped"]`),
		chromedp.WaitVisible(`#message:not(.busy)`),
		chromedp.WaitVisible(problems+`:not([open]) .summary`),
	); err != nil {
		t.Fatal(err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("tr.notes details:not(.graphs)").length`)); err != nil || n != 0 {
		t.Errorf("%d processes repeat the shared warning (%v)", n, err)
	}
	msg, err := chromedp.Run(ctx, chromedp.Text(`#message`))
	if err != nil || msg != "stop app/server: done" {
		t.Fatalf("message %q (%v)", msg, err)
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || loc != ts.URL+"/" {
		t.Fatalf("the page was left for %q (%v): the update did not come live", loc, err)
	}
	if st := ld.process(t, "app", "server"); st.State != "stopped" {
		t.Fatalf("the daemon says %+v", st)
	}
	if st := ld.process(t, "worker", "a"); st.State != "running" {
		t.Fatalf("another process was touched: %+v", st)
	}

	// A phone: the table becomes cards, and the configuration's problems
	// are folded to a line, so that the first process is on the first
	// screen.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch),
		chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(`#live.on`)); err != nil {
		t.Fatal(err)
	}
	folded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.querySelector("details.problems").open && `+
		`document.querySelector("tr.proc").getBoundingClientRect().bottom < window.innerHeight`))
	if err != nil || !folded {
		t.Errorf("on a phone the problems are not folded, or the first process is below the first screen (%v)", err)
	}
	display, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector(".procs thead")).display`))
	if err != nil || display != "none" {
		t.Fatalf("narrow screen: table header display %q (%v)", display, err)
	}
	shoot(t, ctx, "phone.png")
}

// TestBrowserStreamWaitsForTheScripts: the page opens its stream only once
// every script that takes its messages has run. The stream's first
// messages are the recent events; a stream opened by the first script (as
// it was) delivered them, on a loaded machine, before the timeline's
// script had run, and the timeline stayed empty for good. A script the
// browser runs before the page's own notes, at each stream's opening,
// whether the timeline and the graphs were there.
func TestBrowserStreamWaitsForTheScripts(t *testing.T) {
	exe := chromium(t)
	ld := startDaemon(t)
	hist := ld.recordHistory(t)
	_, ts := serve(t, ld.d, ld.layout, func(c *Config) { c.History = hist })
	ctx, _ := browse(t, exe)
	spy := `window.opened = [];
const Real = window.EventSource;
window.EventSource = function (u, o) {
  const v = window.vigil || {};
  window.opened.push(typeof v.timeline + " " + typeof v.graphs);
  return new Real(u, o);
};
Object.assign(window.EventSource, {CONNECTING: 0, OPEN: 1, CLOSED: 2, prototype: Real.prototype});`
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: spy}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(`#live.on`),
		chromedp.WaitVisible(`#events li.kind-started[data-job="app"]`)); err != nil {
		t.Fatal(err)
	}
	opened, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.opened`))
	if err != nil || len(opened) == 0 || slices.ContainsFunc(opened, func(s string) bool { return s != "object object" }) {
		t.Fatalf("streams opened with the timeline and the graphs as %q (%v), want each \"object object\"", opened, err)
	}
}

// browse starts headless Chromium (a wide screen) and returns a tab's
// context, which answers the server's basic-auth challenges as a user at
// the browser's prompt would, and the count of those challenges.
func browse(t *testing.T, exe string) (context.Context, *atomic.Int32) {
	t.Helper()
	// The flags the machine's closed network needs, so that Chromium does
	// not try its own background connections.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.WindowSize(1280, 800),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses its sandbox as root
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelTab)
	ctx, cancel := context.WithTimeout(ctx, 4*testproc.Guard) // failure guard
	var challenges atomic.Int32
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(cancel)
	auths, paused := chromedp.Events(ctx, fetch.AuthRequired), chromedp.Events(ctx, fetch.RequestPaused)
	wg.Go(func() {
		for ev, err := range auths {
			if err != nil {
				return
			}
			challenges.Add(1)
			_, _ = chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID,
				AuthChallengeResponse: &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials,
					Username: testUser, Password: testPassword}})
		}
	})
	wg.Go(func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	})
	yes := true
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: &yes}); err != nil {
		t.Fatal(err)
	}
	return ctx, &challenges
}

// shoot saves a full-page screenshot under the test's artifact directory.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	if !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("%s is not a PNG", name)
	}
}

// click waits until sel is visible, then clicks it in one step of the
// page's own script: the page re-renders its rows on every live update,
// and a node found first and clicked after (chromedp.Click) may be gone by
// then ("Could not find node with given id").
func click(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.WaitVisible(sel)(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.Evaluate[chromedp.Void](`document.querySelector(`+strconv.Quote(sel)+`).click(), 0`)(ctx, t)
	}
}
