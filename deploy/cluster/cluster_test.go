package cluster

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestInterpolateFollowsCompose(t *testing.T) {
	env := map[string]string{"SET": "value", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct{ name, in, want, err string }{
		{name: "plain", in: ":8080", want: ":8080"},
		{name: "default when unset", in: "${UNSET:-90}", want: "90"},
		{name: "default when empty", in: "${EMPTY:-90}", want: "90"},
		{name: "set wins", in: "${SET:-90}", want: "value"},
		{name: "empty default", in: "${UNSET:-}", want: ""},
		{name: "bare form", in: "${SET}", want: "value"},
		{name: "inside text", in: "postgres://${UNSET:-exchange}:${SET}@postgres:5432/x", want: "postgres://exchange:value@postgres:5432/x"},
		{name: "escaped dollar", in: "pa$$word", want: "pa$word"},
		{name: "unbraced is refused", in: "$SET", err: "only ${VAR}"},
		{name: "other operators are refused", in: "${SET:?required}", err: "only ${VAR}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := interpolate(tc.in, lookup)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("interpolate(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("interpolate(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// TestComposeEnvReadsTheComposeFile reads the repository's compose file:
// the shared variables reach every service through the merge key, the
// defaults apply, and the runner's environment overrides them as the
// shell does for docker compose.
func TestComposeEnvReadsTheComposeFile(t *testing.T) {
	repo, err := findRepo()
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) {
		if k == "KAFKA_COMPRESSION" {
			return "lz4", true
		}
		return "", false
	}
	env, err := ComposeEnv(filepath.Join(repo, "docker-compose.yml"), lookup)
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range Services {
		e, ok := env[svc]
		if !ok {
			t.Fatalf("no service %s in the compose file", svc)
		}
		for k, want := range map[string]string{"ADMIN_ADDR": ":9100", "KAFKA_COMPRESSION": "lz4", "LOG_LEVEL": "info",
			"DATABASE_URL": "postgres://exchange:exchange@postgres:5432/exchange?sslmode=disable"} {
			if e[k] != want {
				t.Errorf("%s: %s = %q, want %q", svc, k, e[k], want)
			}
		}
	}
	if got := env["ingress"]["ORDERFLOW_RATE_PER_IP"]; got != "600" {
		t.Errorf("ingress ORDERFLOW_RATE_PER_IP = %q, want the file's default 600", got)
	}
	if got := env["query-api"]["HTTP_ADDR"]; got != ":8080" {
		t.Errorf("query-api HTTP_ADDR = %q, want :8080", got)
	}
}

// TestRenderGatewayPointsEveryUpstreamAtItsInstances renders the
// repository's nginx.conf: every upstream server is replaced by the
// loopback addresses of its instances, every public listener by its
// address, the pid file moves into the run's directory, and nothing of
// Docker's resolver is left. An upstream without instances is an error
// naming it.
func TestRenderGatewayPointsEveryUpstreamAtItsInstances(t *testing.T) {
	repo, err := findRepo()
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(repo, "deploy", "gateway", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	ups := Upstreams{
		"ingress:8080": {"127.0.0.1:1080"}, "ingress:8081": {"127.0.0.1:1081"}, "ingress:8082": {"127.0.0.1:1082"},
		"ingress:8083": {"127.0.0.1:1083"}, "query-api:8080": {"127.0.0.1:2080", "127.0.0.1:3080"},
		"query-api:8083": {"127.0.0.1:2083", "127.0.0.1:3083"}, "orderflow-relay:8082": {"127.0.0.1:4082"},
	}
	public := map[string]string{"8080": "127.0.0.1:18080", "8081": "127.0.0.1:18081", "8082": "127.0.0.1:18082", "8083": "127.0.0.1:18083"}
	out, err := RenderGateway(string(conf), ups, public, "/run/dir")
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{" resolve;", "resolver 127.0.0.11", "/tmp/nginx.pid", "listen 8080;"} {
		if strings.Contains(out, gone) {
			t.Errorf("rendered configuration still has %q", gone)
		}
	}
	upstream := regexp.MustCompile(`(?s)upstream (\w+) \{(.*?)\}`)
	servers := map[string][]string{}
	for _, m := range upstream.FindAllStringSubmatch(out, -1) {
		for _, s := range regexp.MustCompile(`server (\S+) `).FindAllStringSubmatch(m[2], -1) {
			servers[m[1]] = append(servers[m[1]], s[1])
		}
	}
	for name, want := range map[string]string{"ingress_rest": "127.0.0.1:1080", "query_api_rest": "127.0.0.1:2080 127.0.0.1:3080",
		"query_api_orderflow": "127.0.0.1:2083 127.0.0.1:3083", "orderflow_relay_searcher_ws": "127.0.0.1:4082", "ingress_orderflow": "127.0.0.1:1083"} {
		if got := strings.Join(servers[name], " "); got != want {
			t.Errorf("upstream %s: servers %q, want %q", name, got, want)
		}
	}
	for _, want := range []string{"listen 127.0.0.1:18080;", "listen 127.0.0.1:18083;", "pid /run/dir/nginx.pid;", "client_body_temp_path /run/dir/temp/client_body;"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered configuration lacks %q", want)
		}
	}
	delete(ups, "orderflow-relay:8082")
	if _, err := RenderGateway(string(conf), ups, public, "/run/dir"); err == nil || !strings.Contains(err.Error(), "orderflow-relay:8082") {
		t.Errorf("render without the relay's instances: %v, want an error naming orderflow-relay:8082", err)
	}
}

// TestRunnerListensOnLoopbackPortsOnly checks the environment the runner
// gives its processes: the compose file's :<port> listeners (ADMIN_ADDR
// :9100 in every service) stay the compose file's, and every process the
// runner starts, one-shot steps included, listens on loopback ports of
// its own, so that none needs a fixed port free.
func TestRunnerListensOnLoopbackPortsOnly(t *testing.T) {
	repo, err := findRepo()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Config{Repo: repo, DataDir: t.TempDir()}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	compose, err := ComposeEnv(filepath.Join(repo, "docker-compose.yml"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{cfg: cfg, compose: compose}
	for _, svc := range Services {
		names := listeners(c.env(svc))
		if !slices.Contains(names, "ADMIN_ADDR") {
			t.Fatalf("%s: listeners %v of its compose environment lack ADMIN_ADDR", svc, names)
		}
		instance := c.env(svc)
		ports, err := place(instance)
		if err != nil {
			t.Fatal(err)
		}
		if ports["9100"] != instance["ADMIN_ADDR"] {
			t.Errorf("%s: compose port 9100 placed at %q, ADMIN_ADDR is %q", svc, ports["9100"], instance["ADMIN_ADDR"])
		}
		oneShot := c.oneShotEnv(svc)
		for _, k := range names {
			if !strings.HasPrefix(instance[k], "127.0.0.1:") || strings.HasSuffix(instance[k], ":0") {
				t.Errorf("%s instance: %s = %q, want a free loopback address", svc, k, instance[k])
			}
			if oneShot[k] != "127.0.0.1:0" {
				t.Errorf("%s one-shot: %s = %q, want 127.0.0.1:0 (a port the kernel picks)", svc, k, oneShot[k])
			}
		}
	}
}

// TestResolvePublicPicksFreePortsForPortZero checks the gateway's public
// addresses: one of port 0 gets a free loopback port of its own when the
// gateway starts, and a configured one stays as it is.
func TestResolvePublicPicksFreePortsForPortZero(t *testing.T) {
	asked := map[string]string{"8080": "127.0.0.1:0", "8081": "127.0.0.1:0", "8082": "127.0.0.1:18082", "8083": "127.0.0.1:0"}
	got, err := resolvePublic(asked)
	if err != nil {
		t.Fatal(err)
	}
	if got["8082"] != "127.0.0.1:18082" {
		t.Errorf("8082: %q, want the configured 127.0.0.1:18082", got["8082"])
	}
	seen := map[string]bool{}
	for _, port := range []string{"8080", "8081", "8083"} {
		host, p, err := net.SplitHostPort(got[port])
		if err != nil || host != "127.0.0.1" || p == "0" || seen[p] {
			t.Errorf("%s: %q, want a loopback address with a port of its own", port, got[port])
		}
		seen[p] = true
	}
	if asked["8080"] != "127.0.0.1:0" {
		t.Errorf("the asked addresses changed: %v", asked)
	}
}
