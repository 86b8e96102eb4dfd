package deploy

// Tests of the production shape: docker-compose.yml at the repository root,
// the Dockerfiles in docker/ and the gateway configuration in gateway/.
//
// No Docker engine runs on the development machines, so the compose file is
// validated with `docker-compose config` (scripts/ensure-compose.sh installs
// it) and its resolved form is checked against the contract below. The
// gateway is checked by parsing nginx.conf and resolving requests through its
// servers, locations, maps and upstreams the way nginx does.

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	composePath     = "../docker-compose.yml"
	gatewayConfPath = "gateway/nginx.conf"
	deployDocPath   = "../docs/deploy.md"
)

// service is what the compose file must say about one service binary.
type service struct {
	name       string            // compose service name
	dockerfile string            // relative to the repository root
	binary     string            // installed as /usr/local/bin/<binary>
	cmdPath    string            // package built, relative to the repository root
	listeners  map[string]string // listener env var → address, beside ADMIN_ADDR
	// cgo services link C code (ingress: BLS signatures through blst) and
	// run on a glibc distroless base instead of the static one.
	cgo bool
}

// longRunning are the services that start after topics and migrate.
var longRunning = []service{
	{
		name: "ingress", dockerfile: "deploy/docker/ingress.Dockerfile",
		binary: "ingress", cmdPath: "ingress/cmd/ingress", cgo: true,
		listeners: map[string]string{
			"HTTP_ADDR": ":8080", "ORIGINATOR_ADDR": ":8081",
			"SEARCHER_ADDR": ":8082", "ORDERFLOW_ADDR": ":8083",
		},
	},
	{
		name: "matcher", dockerfile: "deploy/docker/matcher.Dockerfile",
		binary: "matcher", cmdPath: "matcher/cmd/matcher",
	},
	{
		name: "settler", dockerfile: "deploy/docker/settler.Dockerfile",
		binary: "settler", cmdPath: "settler/cmd/settler",
	},
	{
		name: "orderflow-relay", dockerfile: "deploy/docker/orderflow-relay.Dockerfile",
		binary: "orderflow-relay", cmdPath: "orderflow-relay/cmd/orderflow-relay",
		listeners: map[string]string{"SEARCHER_WS_ADDR": ":8082"},
	},
	{
		name: "query-api", dockerfile: "deploy/docker/query-api.Dockerfile",
		binary: "query-api", cmdPath: "query-api/cmd/query-api",
		listeners: map[string]string{"HTTP_ADDR": ":8080", "ORDERFLOW_ADDR": ":8083"},
	},
}

// oneShots run to completion before the long-running services start.
var oneShots = []service{
	{
		name: "topics", dockerfile: "deploy/docker/topicctl.Dockerfile",
		binary: "topicctl", cmdPath: "deploy/cmd/topicctl",
	},
	{
		name: "migrate", dockerfile: "deploy/docker/settler.Dockerfile",
		binary: "settler", cmdPath: "settler/cmd/settler",
	},
}

// commonEnv is set on every service binary with these values by default.
var commonEnv = map[string]string{
	"KAFKA_BROKERS": "kafka:9092",
	"ENVIRONMENT":   "hoodi",
	"LOG_LEVEL":     "info",
	"ADMIN_ADDR":    ":9100",
}

// gatewayPorts are the public ports; each is published on the same port.
var gatewayPorts = []int{8080, 8081, 8082, 8083}

// --- docker-compose ---------------------------------------------------------

func TestComposeConfigIsValid(t *testing.T) {
	runCompose(t, nil, "config", "-q")
}

func TestComposeServicesBuildTheirBinaries(t *testing.T) {
	c := loadCompose(t, nil)
	root := repoRoot(t)
	modules := workspaceModules(t)
	for _, s := range slices.Concat(longRunning, oneShots) {
		t.Run(s.name, func(t *testing.T) {
			svc := c.service(t, s.name)
			if svc.Build == nil {
				t.Fatalf("service %s has no build section", s.name)
			}
			if ctx := filepath.Clean(svc.Build.Context); ctx != root {
				t.Errorf("service %s build context = %s, want the repository root %s (the Dockerfiles copy the whole workspace)", s.name, ctx, root)
			}
			if svc.Build.Dockerfile != s.dockerfile {
				t.Fatalf("service %s dockerfile = %q, want %q", s.name, svc.Build.Dockerfile, s.dockerfile)
			}
			df := parseDockerfile(t, filepath.Join(root, s.dockerfile))
			df.check(t, s)

			module, _, _ := strings.Cut(s.cmdPath, "/")
			if !slices.Contains(modules, module) {
				t.Errorf("%s builds ./%s but module %s is not in go.work", s.dockerfile, s.cmdPath, module)
			}
			checkMainPackage(t, filepath.Join(root, s.cmdPath))

			ignore := filepath.Join(root, s.dockerfile+".dockerignore")
			checkDockerignore(t, ignore)
		})
	}
}

func TestComposeLongRunningServicesProbeThemselves(t *testing.T) {
	c := loadCompose(t, nil)
	for _, s := range longRunning {
		svc := c.service(t, s.name)
		want := []string{"CMD", "/usr/local/bin/" + s.binary, "-healthcheck"}
		if svc.Healthcheck == nil || !slices.Equal(svc.Healthcheck.Test, want) {
			t.Errorf("service %s healthcheck = %v, want %v (distroless has no shell: the binary probes its own /readyz)", s.name, svc.Healthcheck, want)
		}
		if svc.Restart != "unless-stopped" && svc.Restart != "always" {
			t.Errorf("service %s restart = %q, want it restarted after a failure", s.name, svc.Restart)
		}
	}
}

func TestComposeStartOrder(t *testing.T) {
	c := loadCompose(t, nil)

	topics := c.service(t, "topics")
	if want := []string{"-brokers", "kafka:9092", "apply"}; !slices.Equal(topics.Command, want) {
		t.Errorf("topics command = %q, want %q", topics.Command, want)
	}
	migrate := c.service(t, "migrate")
	if want := []string{"-migrate"}; !slices.Equal(migrate.Command, want) {
		t.Errorf("migrate command = %q, want %q", migrate.Command, want)
	}

	tests := []struct {
		service, dependency, condition string
	}{
		{"topics", "kafka", "service_healthy"},
		{"migrate", "postgres", "service_healthy"},
		{"gateway", "ingress", "service_healthy"},
		{"gateway", "query-api", "service_healthy"},
		{"gateway", "orderflow-relay", "service_healthy"},
	}
	for _, s := range longRunning {
		tests = append(tests,
			struct{ service, dependency, condition string }{s.name, "topics", "service_completed_successfully"},
			struct{ service, dependency, condition string }{s.name, "migrate", "service_completed_successfully"},
		)
	}
	for _, tt := range tests {
		got, ok := c.service(t, tt.service).DependsOn[tt.dependency]
		switch {
		case !ok:
			t.Errorf("service %s does not depend on %s", tt.service, tt.dependency)
		case got != tt.condition:
			t.Errorf("service %s depends on %s with condition %q, want %q", tt.service, tt.dependency, got, tt.condition)
		}
	}

	for _, name := range []string{"topics", "migrate"} {
		if r := c.service(t, name).Restart; r != "no" && r != "" {
			t.Errorf("one-shot %s restart = %q: a completed step must not be restarted", name, r)
		}
	}
}

func TestComposeOnlyGatewayPublishesPorts(t *testing.T) {
	c := loadCompose(t, nil)
	for name, svc := range c.Services {
		if name != "gateway" && len(svc.Ports) > 0 {
			t.Errorf("service %s publishes %v; only the gateway may publish ports", name, svc.Ports)
		}
	}
	gw := c.service(t, "gateway")
	var published []int
	for _, p := range gw.Ports {
		if p.Published != p.Target {
			t.Errorf("gateway maps host port %d to %d; public and gateway ports must be the same", p.Published, p.Target)
		}
		if p.HostIP != "127.0.0.1" {
			t.Errorf("gateway port %d binds %q by default, want 127.0.0.1 (GATEWAY_HOST widens it)", p.Published, p.HostIP)
		}
		published = append(published, p.Published)
	}
	slices.Sort(published)
	if !slices.Equal(published, gatewayPorts) {
		t.Errorf("gateway publishes %v, want %v", published, gatewayPorts)
	}

	open := loadCompose(t, []string{"GATEWAY_HOST=0.0.0.0"}).service(t, "gateway")
	for _, p := range open.Ports {
		if p.HostIP != "0.0.0.0" && p.HostIP != "" {
			t.Errorf("with GATEWAY_HOST=0.0.0.0 gateway port %d binds %q", p.Published, p.HostIP)
		}
	}
}

func TestComposeEnvironment(t *testing.T) {
	root := repoRoot(t)
	tests := []struct {
		name     string
		env      []string
		wantEnv  string
		user     string
		password string
		keyFile  string // host file of the access-token signing key
	}{
		{
			name: "defaults", wantEnv: "hoodi", user: "exchange", password: "exchange",
			keyFile: filepath.Join(root, "secrets/auth-signing-key.pem"),
		},
		{
			name: "overridden",
			env: []string{"ENVIRONMENT=mainnet", "POSTGRES_USER=ledger", "POSTGRES_PASSWORD=s3cret",
				"AUTH_SIGNING_KEY_PATH=/etc/exchange/signing.pem"},
			wantEnv: "mainnet", user: "ledger", password: "s3cret", keyFile: "/etc/exchange/signing.pem",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loadCompose(t, tt.env)

			pg := c.service(t, "postgres").Environment
			if pg["POSTGRES_USER"] != tt.user || pg["POSTGRES_PASSWORD"] != tt.password || pg["POSTGRES_DB"] != "exchange" {
				t.Errorf("postgres credentials = %s/%s db %s, want %s/%s db exchange",
					pg["POSTGRES_USER"], pg["POSTGRES_PASSWORD"], pg["POSTGRES_DB"], tt.user, tt.password)
			}

			for _, s := range slices.Concat(longRunning, oneShots[1:]) {
				env := c.service(t, s.name).Environment
				want := map[string]string{}
				for k, v := range commonEnv {
					want[k] = v
				}
				want["ENVIRONMENT"] = tt.wantEnv
				for k, v := range s.listeners {
					want[k] = v
				}
				for k, v := range want {
					if env[k] != v {
						t.Errorf("service %s %s = %q, want %q", s.name, k, env[k], v)
					}
				}
				checkDatabaseURL(t, s.name, env["DATABASE_URL"], tt.user, tt.password)
				if !slices.Contains([]string{"mainnet", "hoodi", "dev"}, env["ENVIRONMENT"]) {
					t.Errorf("service %s ENVIRONMENT = %q, want mainnet, hoodi or dev", s.name, env["ENVIRONMENT"])
				}
			}
			checkIngressAuth(t, c, tt.keyFile)
		})
	}
}

// checkIngressAuth holds ingress to what its binary needs to start and to
// limit logins per client: the signing key read from a mounted secret file,
// and the client address taken from the header the gateway sets to the
// peer's address.
func checkIngressAuth(t *testing.T, c composeModel, keyFile string) {
	t.Helper()
	ingress := c.service(t, "ingress")
	env := ingress.Environment
	if _, ok := env["AUTH_SIGNING_KEY"]; ok {
		t.Errorf("ingress sets AUTH_SIGNING_KEY; the key is a secret file (AUTH_SIGNING_KEY_FILE), and both set stops ingress")
	}
	mounted := map[string]string{} // path in the container → secret name
	for _, ref := range ingress.Secrets {
		mounted[ref.path()] = ref.Source
	}
	path := env["AUTH_SIGNING_KEY_FILE"]
	name, ok := mounted[path]
	switch {
	case path == "":
		t.Errorf("ingress has no AUTH_SIGNING_KEY_FILE; the ingress binary refuses to start without a signing key")
	case !ok:
		t.Errorf("ingress AUTH_SIGNING_KEY_FILE = %s, but no secret is mounted there (mounts %v)", path, mounted)
	case c.Secrets[name].File != keyFile:
		t.Errorf("secret %s reads %q, want %s", name, c.Secrets[name].File, keyFile)
	}

	var header string
	for h, v := range effectiveHeaders(parseNginx(t, gatewayConfPath).route(t, 8080, "POST", "/api/v1/user/login", "")) {
		if v == "$remote_addr" {
			header = h
		}
	}
	if header == "" {
		t.Fatalf("the gateway passes the client address in no header of the login route")
	}
	if got := env["AUTH_CLIENT_IP_HEADER"]; !strings.EqualFold(got, header) {
		t.Errorf("ingress AUTH_CLIENT_IP_HEADER = %q, want %s, the header the gateway sets to the client's address; otherwise every login counts against the gateway's", got, header)
	}
}

func TestComposeExposesListeners(t *testing.T) {
	c := loadCompose(t, nil)
	for _, s := range longRunning {
		svc := c.service(t, s.name)
		want := []string{"9100"}
		for _, addr := range s.listeners {
			want = append(want, strings.TrimPrefix(addr, ":"))
		}
		for _, port := range want {
			if !slices.Contains(svc.Expose, port) {
				t.Errorf("service %s does not expose %s (exposes %v)", s.name, port, svc.Expose)
			}
		}
	}
}

func TestComposeInfrastructure(t *testing.T) {
	c := loadCompose(t, nil)

	kafka := c.service(t, "kafka")
	if !strings.HasPrefix(kafka.Image, "apache/kafka:") {
		t.Errorf("kafka image = %q, want apache/kafka", kafka.Image)
	}
	roles := strings.Split(kafka.Environment["KAFKA_PROCESS_ROLES"], ",")
	if !slices.Contains(roles, "broker") || !slices.Contains(roles, "controller") {
		t.Errorf("kafka KAFKA_PROCESS_ROLES = %v, want a combined KRaft broker and controller", roles)
	}
	if got := kafka.Environment["KAFKA_ADVERTISED_LISTENERS"]; !strings.Contains(got, "kafka:9092") {
		t.Errorf("kafka advertises %q; services reach it as kafka:9092", got)
	}
	if got := kafka.Environment["KAFKA_AUTO_CREATE_TOPICS_ENABLE"]; got != "false" {
		t.Errorf("kafka KAFKA_AUTO_CREATE_TOPICS_ENABLE = %q, want false: topics come from topicctl", got)
	}

	pg := c.service(t, "postgres")
	if pg.Image != "postgres:15" && !strings.HasPrefix(pg.Image, "postgres:15.") {
		t.Errorf("postgres image = %q, want postgres:15", pg.Image)
	}

	for name, dataDir := range map[string]string{"kafka": "/var/lib/kafka/data", "postgres": "/var/lib/postgresql/data"} {
		svc := c.service(t, name)
		if svc.Healthcheck == nil || len(svc.Healthcheck.Test) == 0 {
			t.Errorf("service %s has no healthcheck; the steps after it wait for service_healthy", name)
		}
		vol, ok := svc.volumeAt(dataDir)
		switch {
		case !ok:
			t.Errorf("service %s has no volume at %s", name, dataDir)
		case c.Volumes == nil || !mapHasKey(c.Volumes, vol):
			t.Errorf("service %s mounts %q at %s, want a named volume declared under volumes", name, vol, dataDir)
		}
	}
}

func TestComposeMatcherScales(t *testing.T) {
	c := loadCompose(t, nil)
	for name, svc := range c.Services {
		if svc.ContainerName != "" {
			t.Errorf("service %s sets container_name %q, which forbids scaling", name, svc.ContainerName)
		}
	}
	m := c.service(t, "matcher")
	if m.Deploy != nil && m.Deploy.Replicas != nil && *m.Deploy.Replicas < 1 {
		t.Errorf("matcher replicas = %d", *m.Deploy.Replicas)
	}
}

func TestComposeGatewayMountsItsConfig(t *testing.T) {
	c := loadCompose(t, nil)
	gw := c.service(t, "gateway")
	if !strings.HasPrefix(gw.Image, "nginx:") {
		t.Fatalf("gateway image = %q, want nginx", gw.Image)
	}
	if v := nginxVersion(gw.Image); v != nil && slices.Compare(v, []int{1, 27, 3}) < 0 {
		t.Errorf("gateway image %s: nginx.conf uses `server ... resolve`, which needs nginx 1.27.3 or later", gw.Image)
	}
	root := repoRoot(t)
	mounts := map[string]string{}
	for _, v := range gw.Volumes {
		mounts[v.Target] = v.Source
	}
	want := map[string]string{"/etc/nginx/nginx.conf": filepath.Join(root, "deploy/gateway/nginx.conf")}
	for _, inc := range parseNginx(t, gatewayConfPath).includes {
		want["/etc/nginx/"+inc] = filepath.Join(root, "deploy/gateway", inc)
	}
	for target, source := range want {
		if got := mounts[target]; got != source {
			t.Errorf("gateway mounts %q at %s, want %s", got, target, source)
		}
	}
}

func TestDeployDocCoversTheContract(t *testing.T) {
	doc, err := os.ReadFile(deployDocPath)
	if err != nil {
		t.Fatal(err)
	}
	c := loadCompose(t, nil)
	var words []string
	for _, s := range longRunning {
		words = append(words, s.name)
		for k := range c.service(t, s.name).Environment {
			words = append(words, k)
		}
	}
	words = append(words, "-healthcheck", "-migrate", "topicctl", "--scale matcher=", "docker-compose config", "scripts/ensure-compose.sh")
	for _, w := range words {
		if !bytes.Contains(doc, []byte(w)) {
			t.Errorf("docs/deploy.md does not mention %q", w)
		}
	}
}

// --- gateway ----------------------------------------------------------------

// route is the outcome of one request through the gateway.
type route struct {
	backends []string // host:port of the upstream servers
	loc      *block   // the location that proxies it
	srv      *block
}

func TestGatewayRoutes(t *testing.T) {
	conf := parseNginx(t, gatewayConfPath)
	tests := []struct {
		name    string
		port    int
		method  string
		path    string
		upgrade bool
		want    string
	}{
		{"REST read", 8080, "GET", "/api/v1/p/markets", false, "query-api:8080"},
		{"REST HEAD", 8080, "HEAD", "/api/v1/p/markets", false, "query-api:8080"},
		{"REST order", 8080, "POST", "/api/v1/orders", false, "ingress:8080"},
		{"REST cancel", 8080, "DELETE", "/api/v1/orders/7", false, "ingress:8080"},
		{"REST update", 8080, "PUT", "/api/v1/user", false, "ingress:8080"},
		{"REST login", 8080, "POST", "/api/v1/login", false, "ingress:8080"},
		{"REST WebSocket", 8080, "GET", "/ws", true, "query-api:8080"},
		{"originator send", 8081, "POST", "/", false, "ingress:8081"},
		{"originator with key", 8081, "POST", "/v1/KEY", false, "ingress:8081"},
		{"searcher JSON-RPC", 8082, "POST", "/v1/KEY", false, "ingress:8082"},
		{"searcher WebSocket", 8082, "GET", "/v1/KEY", true, "orderflow-relay:8082"},
		{"orderflow challenge", 8083, "GET", "/v1/auth/challenge", false, "ingress:8083"},
		{"orderflow verify", 8083, "POST", "/v1/auth/verify", false, "ingress:8083"},
		{"orderflow revoke", 8083, "POST", "/v1/auth/api-keys/revoke", false, "ingress:8083"},
		{"orderflow tx", 8083, "GET", "/v1/tx/0xabc", false, "query-api:8083"},
		{"orderflow bundle", 8083, "GET", "/v1/bundle", false, "query-api:8083"},
		{"orderflow refunds", 8083, "GET", "/v1/KEY/refunds", false, "query-api:8083"},
		{"orderflow auth prefix only", 8083, "GET", "/v1/authority", false, "query-api:8083"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upgrade := ""
			if tt.upgrade {
				upgrade = "websocket"
			}
			r := conf.route(t, tt.port, tt.method, tt.path, upgrade)
			if !slices.Equal(r.backends, []string{tt.want}) {
				t.Errorf("%s %s on :%d goes to %v, want %s", tt.method, tt.path, tt.port, r.backends, tt.want)
			}
			if tt.upgrade {
				checkWebSocket(t, conf, r)
			}
		})
	}
}

func TestGatewayListensOnPublicPortsOnly(t *testing.T) {
	conf := parseNginx(t, gatewayConfPath)
	var ports []int
	for _, srv := range conf.http(t).blocks("server") {
		for _, l := range srv.all("listen") {
			p, err := strconv.Atoi(l[0])
			if err != nil {
				t.Fatalf("listen %q: want a bare port", l[0])
			}
			ports = append(ports, p)
		}
	}
	slices.Sort(ports)
	if !slices.Equal(ports, gatewayPorts) {
		t.Errorf("gateway listens on %v, want %v (the ports compose publishes)", ports, gatewayPorts)
	}
}

func TestGatewayRequestHandling(t *testing.T) {
	conf := parseNginx(t, gatewayConfPath)
	requestID := conf.mapOf(t, "$gateway_request_id")
	idTests := []struct{ header, want string }{
		{"", "$request_id"},
		{"4f1c2a9e-1b7d-4c55-9a0e-3c6f0b2d8e11", "$http_x_request_id"},
		{"trace.01:abc_DEF", "$http_x_request_id"},
		{"two words", "$request_id"},
		{strings.Repeat("a", 129), "$request_id"},
	}
	for _, tt := range idTests {
		if got := requestID.eval(t, tt.header); got != tt.want {
			t.Errorf("X-Request-ID %q becomes %s, want %s", tt.header, got, tt.want)
		}
	}

	for _, port := range gatewayPorts {
		for _, method := range []string{"GET", "POST"} {
			r := conf.route(t, port, method, "/v1/auth/x", "")
			headers := effectiveHeaders(r)
			want := map[string]string{
				"X-Request-ID":    "$gateway_request_id",
				"X-Forwarded-For": "$proxy_add_x_forwarded_for",
			}
			for h, v := range want {
				if headers[h] != v {
					t.Errorf(":%d %s: proxy_set_header %s = %q, want %q", port, method, h, headers[h], v)
				}
			}
			if got := effective(r, "client_max_body_size"); got != "1m" {
				t.Errorf(":%d: client_max_body_size = %q, want 1m", port, got)
			}
			for _, d := range []string{"proxy_connect_timeout", "proxy_read_timeout", "proxy_send_timeout"} {
				if effective(r, d) == "" {
					t.Errorf(":%d %s: %s not set", port, method, d)
				}
			}
		}
	}

	// Plain request/response routes keep short timeouts.
	for _, port := range []int{8080, 8081, 8083} {
		r := conf.route(t, port, "POST", "/", "")
		if d := nginxDuration(t, effective(r, "proxy_read_timeout")); d > time.Minute {
			t.Errorf(":%d POST: proxy_read_timeout %s, want at most a minute", port, d)
		}
	}
}

func checkWebSocket(t *testing.T, conf *nginxConf, r route) {
	t.Helper()
	headers := effectiveHeaders(r)
	if headers["Upgrade"] != "$http_upgrade" {
		t.Errorf("WebSocket route: Upgrade header = %q, want $http_upgrade", headers["Upgrade"])
	}
	conn := headers["Connection"]
	if conn != "upgrade" {
		if !strings.HasPrefix(conn, "$") {
			t.Fatalf("WebSocket route: Connection header = %q", conn)
		}
		if got := conf.mapOf(t, conn).eval(t, "websocket"); got != "upgrade" {
			t.Errorf("WebSocket route: Connection for an upgrade request = %q, want upgrade", got)
		}
	}
	if got := effective(r, "proxy_http_version"); got != "1.1" {
		t.Errorf("WebSocket route: proxy_http_version = %q, want 1.1", got)
	}
	if d := nginxDuration(t, effective(r, "proxy_read_timeout")); d < 10*time.Minute {
		t.Errorf("WebSocket route: proxy_read_timeout %s closes idle sockets too early", d)
	}
}

// --- compose model ----------------------------------------------------------

// composeModel is the part of `docker-compose config` output the tests read.
// It accepts both the docker-compose 1.x and the Compose v2 spellings.
type composeModel struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
}

type composeService struct {
	Image         string                   `yaml:"image"`
	Build         *composeBuild            `yaml:"build"`
	Command       stringList               `yaml:"command"`
	Environment   stringMap                `yaml:"environment"`
	DependsOn     dependsOn                `yaml:"depends_on"`
	Ports         []composePort            `yaml:"ports"`
	Expose        stringList               `yaml:"expose"`
	Volumes       []composeMount           `yaml:"volumes"`
	Healthcheck   *composeHealthcheck      `yaml:"healthcheck"`
	Restart       string                   `yaml:"restart"`
	ContainerName string                   `yaml:"container_name"`
	Deploy        *struct{ Replicas *int } `yaml:"deploy"`
	Secrets       []composeSecretRef       `yaml:"secrets"`
}

// composeSecretRef is a service's use of a secret, as docker-compose config
// writes it (the long form).
type composeSecretRef struct {
	Source string `yaml:"source"`
	Target string `yaml:"target"`
}

// path is where the secret appears in the container: /run/secrets/<name>
// unless target names another file.
func (r composeSecretRef) path() string {
	target := cmp.Or(r.Target, r.Source)
	if filepath.IsAbs(target) {
		return target
	}
	return "/run/secrets/" + target
}

type composeBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

type composeHealthcheck struct {
	Test stringList `yaml:"test"`
}

func (c composeModel) service(t *testing.T, name string) composeService {
	t.Helper()
	s, ok := c.Services[name]
	if !ok {
		t.Fatalf("docker-compose.yml has no service %q", name)
	}
	return s
}

func (s composeService) volumeAt(target string) (source string, ok bool) {
	for _, m := range s.Volumes {
		if m.Target == target {
			return m.Source, true
		}
	}
	return "", false
}

// stringList is a YAML sequence of scalars, or one scalar.
type stringList []string

func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = strings.Fields(n.Value)
		return nil
	}
	var s []string
	if err := n.Decode(&s); err != nil {
		return err
	}
	*l = s
	return nil
}

// stringMap is a YAML mapping, or a sequence of KEY=VALUE.
type stringMap map[string]string

func (m *stringMap) UnmarshalYAML(n *yaml.Node) error {
	out := stringMap{}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			out[n.Content[i].Value] = n.Content[i+1].Value
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			k, v, _ := strings.Cut(item.Value, "=")
			out[k] = v
		}
	default:
		return fmt.Errorf("environment: unexpected YAML kind %v", n.Kind)
	}
	*m = out
	return nil
}

// dependsOn maps a dependency to its condition ("service_started" when the
// short list form is used).
type dependsOn map[string]string

func (d *dependsOn) UnmarshalYAML(n *yaml.Node) error {
	out := dependsOn{}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, item := range n.Content {
			out[item.Value] = "service_started"
		}
	case yaml.MappingNode:
		var long map[string]struct {
			Condition string `yaml:"condition"`
		}
		if err := n.Decode(&long); err != nil {
			return err
		}
		for k, v := range long {
			out[k] = v.Condition
		}
	default:
		return fmt.Errorf("depends_on: unexpected YAML kind %v", n.Kind)
	}
	*d = out
	return nil
}

// composePort is one published port, from "[ip:]published:target[/proto]"
// or the long form.
type composePort struct {
	HostIP    string
	Published int
	Target    int
}

func (p *composePort) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var long struct {
			HostIP    string `yaml:"host_ip"`
			Published string `yaml:"published"`
			Target    int    `yaml:"target"`
		}
		if err := n.Decode(&long); err != nil {
			return err
		}
		published, err := strconv.Atoi(long.Published)
		if err != nil {
			return fmt.Errorf("port %+v: published: %w", long, err)
		}
		*p = composePort{HostIP: long.HostIP, Published: published, Target: long.Target}
		return nil
	}
	spec, _, _ := strings.Cut(n.Value, "/")
	parts := strings.Split(spec, ":")
	if len(parts) < 2 {
		return fmt.Errorf("port %q publishes no host port", n.Value)
	}
	var err error
	if p.Target, err = strconv.Atoi(parts[len(parts)-1]); err != nil {
		return fmt.Errorf("port %q: %w", n.Value, err)
	}
	if p.Published, err = strconv.Atoi(parts[len(parts)-2]); err != nil {
		return fmt.Errorf("port %q: %w", n.Value, err)
	}
	p.HostIP = strings.Join(parts[:len(parts)-2], ":")
	return nil
}

// composeMount is one volume, from "source:target[:mode]" or the long form.
type composeMount struct {
	Source, Target string
}

func (m *composeMount) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var long struct {
			Source string `yaml:"source"`
			Target string `yaml:"target"`
		}
		if err := n.Decode(&long); err != nil {
			return err
		}
		*m = composeMount{Source: long.Source, Target: long.Target}
		return nil
	}
	parts := strings.Split(n.Value, ":")
	if len(parts) < 2 {
		return fmt.Errorf("volume %q has no target", n.Value)
	}
	*m = composeMount{Source: parts[0], Target: parts[1]}
	return nil
}

// runCompose runs docker-compose on the repository's compose file with a
// clean environment (plus env) and an empty env file, so that neither the
// caller's shell nor a local .env changes what is checked.
func runCompose(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatal("docker-compose is not installed; run scripts/ensure-compose.sh (installs Debian's docker-compose) and test again")
	}
	envFile := filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(envFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"-f", composePath, "--env-file", envFile}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// loadCompose returns the compose file as docker-compose resolves it:
// variables interpolated, anchors merged, paths made absolute.
func loadCompose(t *testing.T, env []string) composeModel {
	t.Helper()
	key := strings.Join(env, "\x00")
	resolved.Lock()
	out, ok := resolved.out[key]
	resolved.Unlock()
	if !ok {
		out = runCompose(t, env, "config")
		resolved.Lock()
		resolved.out[key] = out
		resolved.Unlock()
	}
	var c composeModel
	if err := yaml.Unmarshal(out, &c); err != nil {
		t.Fatalf("parse docker-compose config output: %v", err)
	}
	return c
}

// resolved caches `docker-compose config` output per environment: each run
// starts a Python interpreter and takes about a second.
var resolved = struct {
	sync.Mutex
	out map[string][]byte
}{out: map[string][]byte{}}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// workspaceModules lists the directories named by go.work's use directives.
func workspaceModules(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../go.work")
	if err != nil {
		t.Fatal(err)
	}
	var mods []string
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:use\s+)?\./([\w.-]+)\s*$`).FindAllStringSubmatch(string(data), -1) {
		mods = append(mods, m[1])
	}
	return mods
}

// checkMainPackage accepts a command directory that does not exist yet (its
// module is declared in go.work) and checks one that exists is a main package.
func checkMainPackage(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Logf("%s has no Go files yet; the image build needs them", dir)
		return
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`(?m)^package main\b`).Match(data) {
			return
		}
	}
	t.Errorf("%s is not a main package", dir)
}

func checkDatabaseURL(t *testing.T, svc, raw, user, password string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Errorf("service %s DATABASE_URL %q: %v", svc, raw, err)
		return
	}
	pw, _ := u.User.Password()
	switch {
	case u.Scheme != "postgres" && u.Scheme != "postgresql":
		t.Errorf("service %s DATABASE_URL scheme %q", svc, u.Scheme)
	case u.Host != "postgres:5432":
		t.Errorf("service %s DATABASE_URL host %q, want postgres:5432", svc, u.Host)
	case u.Path != "/exchange":
		t.Errorf("service %s DATABASE_URL database %q, want exchange", svc, u.Path)
	case u.Query().Get("sslmode") != "disable":
		t.Errorf("service %s DATABASE_URL sslmode %q, want disable", svc, u.Query().Get("sslmode"))
	case u.User.Username() != user || pw != password:
		t.Errorf("service %s DATABASE_URL credentials %s/%s, want the postgres service's %s/%s", svc, u.User.Username(), pw, user, password)
	}
}

func mapHasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// nginxVersion reads major.minor[.patch] from an nginx image tag.
func nginxVersion(image string) []int {
	_, tag, _ := strings.Cut(image, ":")
	m := regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`).FindStringSubmatch(tag)
	if m == nil {
		return nil
	}
	var v []int
	for _, s := range m[1:] {
		n, _ := strconv.Atoi(s)
		v = append(v, n)
	}
	return v
}

// --- Dockerfiles ------------------------------------------------------------

type dockerfile struct {
	path   string
	stages []dockerStage
}

type dockerStage struct {
	from         string   // image
	name         string   // AS name, if any
	instructions []string // instruction lines with continuations joined
}

func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	df := dockerfile{path: path}
	var line strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "#") || (text == "" && line.Len() == 0) {
			continue
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			line.WriteString(cont + " ")
			continue
		}
		line.WriteString(text)
		full := strings.Join(strings.Fields(line.String()), " ")
		line.Reset()
		if from, ok := strings.CutPrefix(full, "FROM "); ok {
			st := dockerStage{from: from}
			if f := strings.Fields(from); len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.from, st.name = f[0], f[2]
			}
			df.stages = append(df.stages, st)
			continue
		}
		if len(df.stages) == 0 {
			t.Fatalf("%s: %q before FROM", path, full)
		}
		st := &df.stages[len(df.stages)-1]
		st.instructions = append(st.instructions, full)
	}
	return df
}

func (d dockerfile) check(t *testing.T, s service) {
	t.Helper()
	if len(d.stages) < 2 {
		t.Fatalf("%s: %d stages, want a builder and a runtime stage", d.path, len(d.stages))
	}
	build, run := d.stages[0], d.stages[len(d.stages)-1]
	if build.from != "golang:1.26" && !strings.HasPrefix(build.from, "golang:1.26.") && !strings.HasPrefix(build.from, "golang:1.26-") {
		t.Errorf("%s: builder FROM %s, want golang:1.26", d.path, build.from)
	}
	buildLines := strings.Join(build.instructions, "\n")
	wantCgo, wantRuntime := "CGO_ENABLED=0", "gcr.io/distroless/static"
	if s.cgo {
		wantCgo, wantRuntime = "CGO_ENABLED=1", "gcr.io/distroless/base"
	}
	if !strings.Contains(buildLines, wantCgo) {
		t.Errorf("%s: builder does not set %s", d.path, wantCgo)
	}
	if !regexp.MustCompile(`(?m)^COPY \. \.`).MatchString(buildLines) {
		t.Errorf("%s: builder does not copy the whole workspace", d.path)
	}
	goBuild := regexp.MustCompile(`go build .*-o (\S+) \./(\S+)$`).FindStringSubmatch(buildLines)
	if goBuild == nil {
		t.Fatalf("%s: no `go build ... -o <out> ./<pkg>` line", d.path)
	}
	if goBuild[2] != s.cmdPath {
		t.Errorf("%s builds ./%s, want ./%s", d.path, goBuild[2], s.cmdPath)
	}

	if !strings.HasPrefix(run.from, wantRuntime) {
		t.Errorf("%s: runtime FROM %s, want %s", d.path, run.from, wantRuntime)
	}
	bin := "/usr/local/bin/" + s.binary
	var user, entrypoint string
	copied := false
	for _, ins := range run.instructions {
		switch {
		case strings.HasPrefix(ins, "USER "):
			user = strings.TrimPrefix(ins, "USER ")
		case strings.HasPrefix(ins, "ENTRYPOINT "):
			entrypoint = strings.TrimPrefix(ins, "ENTRYPOINT ")
		case ins == "COPY --from="+build.name+" "+goBuild[1]+" "+bin:
			copied = true
		}
	}
	if !copied {
		t.Errorf("%s: runtime stage does not copy %s from the builder to %s", d.path, goBuild[1], bin)
	}
	if user == "" || strings.HasPrefix(user, "root") || strings.HasPrefix(user, "0") {
		t.Errorf("%s: runtime USER %q, want a non-root user", d.path, user)
	}
	if want := `["` + bin + `"]`; entrypoint != want {
		t.Errorf("%s: ENTRYPOINT %s, want %s", d.path, entrypoint, want)
	}
}

func checkDockerignore(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("build context ignore file: %v", err)
		return
	}
	lines := strings.Split(string(data), "\n")
	for _, want := range []string{".git", ".data"} {
		if !slices.Contains(lines, want) {
			t.Errorf("%s does not leave %s out of the build context", path, want)
		}
	}
}

// --- nginx configuration ----------------------------------------------------

// block is one nginx directive; a block directive has children.
type block struct {
	name     string
	args     []string
	children []*block
	parent   *block
}

func (b *block) blocks(name string) []*block {
	var out []*block
	for _, c := range b.children {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

func (b *block) all(name string) [][]string {
	var out [][]string
	for _, c := range b.blocks(name) {
		out = append(out, c.args)
	}
	return out
}

type nginxConf struct {
	root     *block
	includes []string // files pulled in by include, relative to the config dir
}

// parseNginx reads an nginx configuration, inlining include files found
// next to it.
func parseNginx(t *testing.T, path string) *nginxConf {
	t.Helper()
	conf := &nginxConf{root: &block{name: "main"}}
	conf.parseInto(t, path, conf.root)
	return conf
}

func (c *nginxConf) parseInto(t *testing.T, path string, parent *block) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	toks := tokenizeNginx(t, path, string(data))
	stack := []*block{parent}
	var words []string
	for _, tok := range toks {
		cur := stack[len(stack)-1]
		switch tok {
		case ";":
			if len(words) == 0 {
				t.Fatalf("%s: empty directive", path)
			}
			if words[0] == "include" {
				inc := words[1]
				if !slices.Contains(c.includes, inc) {
					c.includes = append(c.includes, inc)
				}
				c.parseInto(t, filepath.Join(filepath.Dir(path), inc), cur)
			} else {
				cur.children = append(cur.children, &block{name: words[0], args: words[1:], parent: cur})
			}
			words = nil
		case "{":
			b := &block{name: words[0], args: words[1:], parent: cur}
			cur.children = append(cur.children, b)
			stack = append(stack, b)
			words = nil
		case "}":
			if len(words) != 0 || len(stack) == 1 {
				t.Fatalf("%s: unbalanced }", path)
			}
			stack = stack[:len(stack)-1]
		default:
			words = append(words, tok)
		}
	}
	if len(stack) != 1 || len(words) != 0 {
		t.Fatalf("%s: unterminated block or directive", path)
	}
}

// tokenizeNginx splits a configuration into words, quoted strings (unquoted)
// and the punctuation ; { }, dropping comments. Map blocks keep their
// entries as word pairs.
func tokenizeNginx(t *testing.T, path, src string) []string {
	t.Helper()
	var toks []string
	var word strings.Builder
	flush := func() {
		if word.Len() > 0 {
			toks = append(toks, word.String())
			word.Reset()
		}
	}
	for i := 0; i < len(src); i++ {
		ch := src[i]
		switch {
		case ch == '#' && word.Len() == 0:
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case ch == '"' || ch == '\'':
			end := i + 1
			for end < len(src) && src[end] != ch {
				if src[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(src) {
				t.Fatalf("%s: unterminated string", path)
			}
			flush()
			toks = append(toks, src[i+1:end])
			i = end
		case ch == ';' || ch == '{' || ch == '}':
			flush()
			toks = append(toks, string(ch))
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
			flush()
		default:
			word.WriteByte(ch)
		}
	}
	flush()
	return toks
}

func (c *nginxConf) http(t *testing.T) *block {
	t.Helper()
	h := c.root.blocks("http")
	if len(h) != 1 {
		t.Fatalf("nginx.conf: %d http blocks", len(h))
	}
	return h[0]
}

// nginxMap is one map block: source variable → result.
type nginxMap struct {
	source  string
	entries [][2]string
}

func (c *nginxConf) mapOf(t *testing.T, variable string) nginxMap {
	t.Helper()
	for _, m := range c.http(t).blocks("map") {
		if len(m.args) == 2 && m.args[1] == variable {
			nm := nginxMap{source: m.args[0]}
			for _, e := range m.children {
				if len(e.args) != 1 {
					t.Fatalf("map %s: entry %q %q", variable, e.name, e.args)
				}
				nm.entries = append(nm.entries, [2]string{e.name, e.args[0]})
			}
			return nm
		}
	}
	t.Fatalf("nginx.conf: no map sets %s", variable)
	return nginxMap{}
}

// eval gives the map's value for one value of its source variable: exact
// keys first, then regular expressions in order, then default.
func (m nginxMap) eval(t *testing.T, value string) string {
	t.Helper()
	v, _, _ := m.find(value)
	return v
}

// expand is eval with the named captures ($name) of a regular expression
// entry substituted in its value, as nginx does.
func (m nginxMap) expand(t *testing.T, value string) string {
	t.Helper()
	v, re, match := m.find(value)
	if re == nil {
		return v
	}
	return string(re.ExpandString(nil, v, value, match))
}

// find returns the value of the entry nginx picks for value and, when that
// entry is a regular expression, the expression and its match.
func (m nginxMap) find(value string) (string, *regexp.Regexp, []int) {
	def := ""
	for _, e := range m.entries {
		if e[0] == "default" {
			def = e[1]
		} else if !strings.HasPrefix(e[0], "~") && e[0] == value {
			return e[1], nil, nil
		}
	}
	for _, e := range m.entries {
		if pattern, ok := strings.CutPrefix(e[0], "~"); ok {
			if p, ok := strings.CutPrefix(pattern, "*"); ok {
				pattern = "(?i)" + p
			}
			re := regexp.MustCompile(pattern)
			if match := re.FindStringSubmatchIndex(value); match != nil {
				return e[1], re, match
			}
		}
	}
	return def, nil, nil
}

// route resolves a request to a port, method and path to its upstream
// servers: server by listen port, location by nginx's rules for exact and
// prefix locations, proxy_pass through maps to an upstream block.
func (c *nginxConf) route(t *testing.T, port int, method, path, upgrade string) route {
	t.Helper()
	http := c.http(t)
	var srv *block
	for _, s := range http.blocks("server") {
		for _, l := range s.all("listen") {
			if l[0] == strconv.Itoa(port) {
				srv = s
			}
		}
	}
	if srv == nil {
		t.Fatalf("nginx.conf: no server listens on %d", port)
	}
	loc := matchLocation(t, srv, path)
	pass := loc.all("proxy_pass")
	if len(pass) != 1 {
		t.Fatalf(":%d %s: location %v has %d proxy_pass", port, path, loc.args, len(pass))
	}
	target, ok := strings.CutPrefix(pass[0][0], "http://")
	if !ok {
		t.Fatalf(":%d %s: proxy_pass %q is not http://", port, path, pass[0][0])
	}
	if strings.HasPrefix(target, "$") {
		m := c.mapOf(t, target)
		switch m.source {
		case "$request_method":
			target = m.eval(t, method)
		case "$http_upgrade":
			target = m.eval(t, upgrade)
		default:
			t.Fatalf("map %s: source %s is not modelled by this test", target, m.source)
		}
	}
	for _, u := range http.blocks("upstream") {
		if len(u.args) == 1 && u.args[0] == target {
			var backends []string
			for _, s := range u.all("server") {
				backends = append(backends, s[0])
			}
			return route{backends: backends, loc: loc, srv: srv}
		}
	}
	return route{backends: []string{target}, loc: loc, srv: srv}
}

// matchLocation picks the location nginx would: an exact match, else the
// longest prefix. Regular-expression locations are not used by the gateway
// and are refused so that this model stays faithful.
func matchLocation(t *testing.T, srv *block, path string) *block {
	t.Helper()
	var best *block
	bestLen := -1
	for _, loc := range srv.blocks("location") {
		switch {
		case len(loc.args) == 2 && loc.args[0] == "=":
			if loc.args[1] == path {
				return loc
			}
		case len(loc.args) == 2 && loc.args[0] == "^~", len(loc.args) == 1:
			prefix := loc.args[len(loc.args)-1]
			if strings.HasPrefix(prefix, "@") {
				continue
			}
			if strings.HasPrefix(path, prefix) && len(prefix) > bestLen {
				best, bestLen = loc, len(prefix)
			}
		default:
			t.Fatalf("location %q: only exact and prefix locations are expected in the gateway", loc.args)
		}
	}
	if best == nil {
		t.Fatalf("no location matches %s", path)
	}
	return best
}

// effective returns the first argument of a directive as inherited by the
// route's location (location, then server, then http).
func effective(r route, name string) string {
	for b := r.loc; b != nil; b = b.parent {
		if v := b.all(name); len(v) > 0 {
			return v[len(v)-1][0]
		}
	}
	return ""
}

// effectiveHeaders returns the proxy_set_header set that applies: like
// nginx, the innermost level that has any replaces the outer ones whole.
func effectiveHeaders(r route) map[string]string {
	for b := r.loc; b != nil; b = b.parent {
		if v := b.all("proxy_set_header"); len(v) > 0 {
			out := map[string]string{}
			for _, h := range v {
				out[h[0]] = h[1]
			}
			return out
		}
	}
	return nil
}

// nginxDuration parses nginx time values such as 30s, 5m, 1h (bare numbers
// are seconds).
func nginxDuration(t *testing.T, v string) time.Duration {
	t.Helper()
	if _, err := strconv.Atoi(v); err == nil {
		v += "s"
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("nginx time %q: %v", v, err)
	}
	return d
}
