package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"blockspace.exchange/platform/childproc"
)

// Upstreams maps a compose address, service:port as nginx.conf names it
// (query-api:8080), to the loopback addresses of the instances serving it.
type Upstreams map[string][]string

// RenderGateway turns deploy/gateway/nginx.conf, written for compose, into
// the same gateway on loopback: every upstream server becomes the
// instances that serve it, each public `listen <port>` the address public
// gives that port, and the pid file and temporary files go to dir. The
// routing, headers, limits and log format are the file's own. An upstream
// the file names and upstreams lacks is an error: the file and the runner
// must agree on every service.
func RenderGateway(conf string, ups Upstreams, public map[string]string, dir string) (string, error) {
	var errs []string
	// Docker's DNS is not here; the loopback addresses need no resolver.
	out := regexp.MustCompile(`(?m)^[ \t]*resolver [^;]*;[ \t]*\n`).ReplaceAllString(conf, "")
	out = regexp.MustCompile(`(?m)^([ \t]*)server ([a-z0-9-]+:[0-9]+) resolve;`).ReplaceAllStringFunc(out, func(m string) string {
		sub := regexp.MustCompile(`^([ \t]*)server ([^ ]+) resolve;`).FindStringSubmatch(m)
		addrs := ups[sub[2]]
		if len(addrs) == 0 {
			errs = append(errs, "no instance serves upstream "+sub[2])
			return m
		}
		lines := make([]string, len(addrs))
		for i, a := range addrs {
			// A refused connection tries the next instance and rests this
			// one for 2 s, so a restarting instance costs no request that
			// another could answer.
			lines[i] = fmt.Sprintf("%sserver %s max_fails=1 fail_timeout=2s;", sub[1], a)
		}
		return strings.Join(lines, "\n")
	})
	out = regexp.MustCompile(`(?m)^([ \t]*)listen ([0-9]+);`).ReplaceAllStringFunc(out, func(m string) string {
		sub := regexp.MustCompile(`^([ \t]*)listen ([0-9]+);`).FindStringSubmatch(m)
		addr, ok := public[sub[2]]
		if !ok {
			errs = append(errs, "no public address for port "+sub[2])
			return m
		}
		return sub[1] + "listen " + addr + ";"
	})
	pid := regexp.MustCompile(`(?m)^pid [^;]*;`)
	if !pid.MatchString(out) {
		errs = append(errs, "no pid directive")
	}
	out = pid.ReplaceAllString(out, "pid "+filepath.Join(dir, "nginx.pid")+";")
	temp := "http {\n"
	for _, kind := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		temp += fmt.Sprintf("    %s_temp_path %s;\n", kind, filepath.Join(dir, "temp", kind))
	}
	if !strings.Contains(out, "\nhttp {\n") {
		errs = append(errs, "no http block")
	}
	out = strings.Replace(out, "\nhttp {\n", "\n"+temp, 1)
	if len(errs) != 0 {
		return "", fmt.Errorf("render gateway: %s", strings.Join(errs, "; "))
	}
	return "# Rendered by the cluster runner from deploy/gateway/nginx.conf; rewritten at every start.\n" + out, nil
}

// nginxBinary is Debian's nginx (scripts/ensure-nginx.sh installs it).
func nginxBinary() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx", nil
	}
	return "", fmt.Errorf("nginx not found: run scripts/ensure-nginx.sh (make run-cluster does)")
}

// gateway is the running nginx.
type gateway struct {
	dir     string
	logPath string
	proc    *childproc.Process
}

// startGateway writes the rendered configuration beside a copy of
// errors.conf (which it includes), checks it with `nginx -t`, starts
// nginx in the foreground and waits until every public address accepts
// connections.
func startGateway(ctx context.Context, repo, dir, logPath string, ups Upstreams, public map[string]string) (*gateway, error) {
	bin, err := nginxBinary()
	if err != nil {
		return nil, err
	}
	src := filepath.Join(repo, "deploy", "gateway")
	conf, err := os.ReadFile(filepath.Join(src, "nginx.conf"))
	if err != nil {
		return nil, err
	}
	rendered, err := RenderGateway(string(conf), ups, public, dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "temp"), 0o755); err != nil {
		return nil, err
	}
	errorsConf, err := os.ReadFile(filepath.Join(src, "errors.conf"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "errors.conf"), errorsConf, 0o644); err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(rendered), 0o644); err != nil {
		return nil, err
	}
	args := []string{"-p", dir, "-e", "stderr", "-c", confPath}
	if out, err := exec.CommandContext(ctx, bin, append(args, "-t", "-q")...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("nginx -t %s: %w\n%s", confPath, err, out)
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, append(args, "-g", "daemon off;")...)
	cmd.Stdout, cmd.Stderr = log, log
	p, err := childproc.Start(cmd, syscall.SIGTERM, nil)
	if err != nil {
		return nil, err
	}
	g := &gateway{dir: dir, logPath: logPath, proc: p}
	for _, addr := range public {
		if err := g.waitListening(ctx, addr); err != nil {
			g.stop(5 * time.Second)
			return nil, err
		}
	}
	return g, nil
}

func (g *gateway) waitListening(ctx context.Context, addr string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		if g.proc.Exited() || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("gateway: nothing listens on %s; the end of %s:\n%s", addr, g.logPath, tail(g.logPath, 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop asks nginx for a graceful stop (SIGQUIT: finish the requests in
// flight), killing it after grace.
func (g *gateway) stop(grace time.Duration) {
	_ = g.proc.Signal(syscall.SIGQUIT)
	select {
	case <-g.proc.Done():
	case <-time.After(grace):
		_ = g.proc.Signal(syscall.SIGKILL)
		<-g.proc.Done()
	}
}
