package monit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// CLI is the monit command line: what it needs from outside.
type CLI struct {
	Root   string // the BOSH root (for the default control file)
	Stdout io.Writer
	Stderr io.Writer
	// Reload asks the daemon to re-read its configuration; Quit ends it.
	Reload func(ctx context.Context) error
	Quit   func(ctx context.Context) error
	// Daemon runs the daemon in the foreground for a root (monit -I, as
	// the stemcell's runit and systemd services start monit).
	Daemon func(root string) int
	// Client talks to the daemon's HTTP API; nil means a 30-second client.
	Client *http.Client
}

const cliUsage = `Usage: monit [options] {arguments}
Options are as follows:
 -c file       Use this control file
 -d n          Run as a daemon once per n seconds
 -g name       Set group name for start, stop, restart, monitor and unmonitor
 -l logfile    Print log information to this file
 -p pidfile    Use this lock file in daemon mode
 -s statefile  Set the file monit should write state information to
 -I            Do not run in background (needed for run from init)
 -t            Run syntax check for the control file
 -v            Verbose mode, work noisy (diagnostic output)
 -H [filename] Print SHA1 and MD5 hashes of the file or of stdin if the
               filename is omited; monit will exit afterwards
 -V            Print version number and patchlevel
 -h            Print this text
Optional action arguments for non-daemon mode are as follows:
 start all      - Start all services
 start name     - Only start the named service
 stop all       - Stop all services
 stop name      - Only stop the named service
 restart all    - Stop and start all services
 restart name   - Only restart the named service
 monitor all    - Enable monitoring of all services
 monitor name   - Only enable monitoring of the named service
 unmonitor all  - Disable monitoring of all services
 unmonitor name - Only disable monitoring of the named service
 reload         - Reinitialize monit
 status         - Print full status information for each service
 summary        - Print short status information for each service
 quit           - Kill monit daemon process
 validate       - Check all services and start if not running
 procmatch <pattern> - Test process matching pattern

(Action arguments operate on services defined in the control file)
`

// Run runs one monit command line and returns its exit status.
func (c *CLI) Run(ctx context.Context, args []string) int {
	file, group := "", ""
	var rest []string
	syntax, foreground := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-c", "-g", "-d", "-l", "-p", "-s":
			if i+1 >= len(args) {
				fmt.Fprintf(c.Stderr, "monit: option requires an argument -- %s\n", a[1:])
				return 1
			}
			i++
			switch a {
			case "-c":
				file = args[i]
			case "-g":
				group = args[i]
			}
		case "-I":
			foreground = true
		case "-v", "-vv":
		case "-t":
			syntax = true
		case "-V":
			fmt.Fprintf(c.Stdout, "This is Monit version %s\nCopyright (C) 2000-2011 Tildeslash Ltd. All Rights Reserved.\n", Version)
			return 0
		case "-h", "--help":
			fmt.Fprint(c.Stdout, cliUsage)
			return 0
		default:
			if strings.HasPrefix(a, "-") {
				fmt.Fprintf(c.Stderr, "monit: invalid option -- %s  (-h will show valid options)\n", strings.TrimLeft(a, "-"))
				return 1
			}
			rest = append(rest, a)
		}
	}
	cfg, err := c.load(file)
	if err != nil {
		fmt.Fprintf(c.Stderr, "monit: %v\n", err)
		return 1
	}
	cfg = cfg.WithSystem(hostname()) // "all" includes monit's own system service
	if syntax {
		if len(cfg.Problems) > 0 {
			for _, p := range cfg.Problems {
				fmt.Fprintf(c.Stderr, "%s\n", p)
			}
			return 1
		}
		fmt.Fprintln(c.Stderr, "Control file syntax OK") // monit logs it, to stderr
		return 0
	}
	if len(rest) == 0 {
		if !foreground || c.Daemon == nil {
			fmt.Fprintln(c.Stderr, "monit: run the daemon in the foreground with -I (as the stemcell's monit service does)")
			return 1
		}
		return c.Daemon(c.rootOf(file))
	}
	return c.command(ctx, cfg, group, rest)
}

// rootOf is the BOSH root a control file belongs to: ROOT of
// ROOT/bosh/etc/monitrc, else the CLI's root.
func (c *CLI) rootOf(file string) string {
	if abs, err := filepath.Abs(file); file != "" && err == nil && strings.HasSuffix(abs, "/bosh/etc/monitrc") {
		return strings.TrimSuffix(abs, "/bosh/etc/monitrc")
	}
	return c.Root
}

func (c *CLI) load(file string) (*monitrc.Config, error) {
	if file != "" {
		return monitrc.LoadFile(file, c.rootOf(file))
	}
	cfg, found, err := monitrc.Load(c.Root)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("cannot find the control file at %s", monitrc.Paths{Root: c.Root}.Monitrc())
	}
	return cfg, nil
}

func (c *CLI) command(ctx context.Context, cfg *monitrc.Config, group string, args []string) int {
	verb := args[0]
	switch verb {
	case "status", "summary":
		level := "full"
		if verb == "summary" {
			level = "summary"
		}
		code, body, err := c.call(ctx, cfg, http.MethodGet, "/_status?format=text&level="+level, "")
		if err != nil || code != http.StatusOK {
			fmt.Fprintln(c.Stderr, "monit: no status available -- the monit daemon is not running")
			return 0
		}
		fmt.Fprint(c.Stdout, body)
		return 0
	case "start", "stop", "restart", "monitor", "unmonitor":
		var names []string
		switch {
		case group != "":
			for _, s := range cfg.Services {
				if s.InGroup(group) {
					names = append(names, s.Name)
				}
			}
		case len(args) < 2:
			fmt.Fprintf(c.Stderr, "monit: please specify the configured service name or 'all' after %s\n", verb)
			return 1
		case args[1] == "all":
			for _, s := range cfg.Services {
				names = append(names, s.Name)
			}
		default:
			names = []string{args[1]}
		}
		for _, n := range names {
			code, body, err := c.call(ctx, cfg, http.MethodPost, "/"+url.PathEscape(n), "action="+verb)
			switch {
			case err != nil:
				fmt.Fprintf(c.Stderr, "monit: cannot connect to the monit daemon. Did you start it with http support?\n")
				return 1
			case code != http.StatusOK:
				fmt.Fprintf(c.Stderr, "monit: action failed -- %s\n", strings.TrimSpace(body))
				return 1
			}
		}
		return 0
	case "reload":
		fmt.Fprintln(c.Stderr, "Reinitializing monit daemon")
		if err := c.Reload(ctx); err != nil {
			fmt.Fprintf(c.Stderr, "monit: %v\n", err)
			return 1
		}
		return 0
	case "quit":
		if err := c.Quit(ctx); err != nil {
			fmt.Fprintf(c.Stderr, "monit: %v\n", err)
			return 1
		}
		return 0
	case "validate":
		return 0 // the supervisors check continuously; nothing is left to start
	}
	fmt.Fprintf(c.Stderr, "monit: invalid argument -- %s  (-h will show valid arguments)\n", verb)
	return 1
}

// call makes one request to the daemon with the first credential.
func (c *CLI) call(ctx context.Context, cfg *monitrc.Config, method, path, body string) (int, string, error) {
	if cfg.HTTPD == nil {
		return 0, "", errors.New("the control file has no set httpd")
	}
	creds, err := ReadCredentials(cfg.HTTPD)
	if err != nil {
		return 0, "", err
	}
	host := cfg.HTTPD.Address
	if host == "" {
		host = "localhost"
	}
	u := "http://" + net.JoinHostPort(host, fmt.Sprint(cfg.HTTPD.Port)) + path
	req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("build request: %w", err)
	}
	if len(creds) > 0 {
		req.SetBasicAuth(creds[0].User, creds[0].Password)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("reach the daemon: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, "", fmt.Errorf("read the answer: %w", err)
	}
	return resp.StatusCode, string(b), nil
}
