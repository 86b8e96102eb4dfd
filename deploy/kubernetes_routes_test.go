package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// gatewayRoute is one location of the gateway and a service:port it may
// send a request to (a location routed by method has several).
type gatewayRoute struct {
	port     int
	location string
	backend  string // service:port
}

func (r gatewayRoute) String() string {
	return fmt.Sprintf(":%d location %s -> %s", r.port, r.location, r.backend)
}

// gatewayRoutes lists every location of nginx.conf with every upstream
// server its proxy_pass reaches, through the maps it names.
func gatewayRoutes(t *testing.T, conf *nginxConf) []gatewayRoute {
	t.Helper()
	http := conf.http(t)
	upstreams := map[string][]string{}
	for _, u := range http.blocks("upstream") {
		for _, s := range u.all("server") {
			upstreams[u.args[0]] = append(upstreams[u.args[0]], s[0])
		}
	}
	var out []gatewayRoute
	for _, srv := range http.blocks("server") {
		port, err := strconv.Atoi(srv.all("listen")[0][0])
		if err != nil {
			t.Fatalf("nginx.conf: listen %v", srv.all("listen"))
		}
		for _, loc := range srv.blocks("location") {
			path := strings.Join(loc.args, " ")
			if strings.HasPrefix(loc.args[0], "@") {
				continue
			}
			target, _ := strings.CutPrefix(loc.all("proxy_pass")[0][0], "http://")
			targets := []string{target}
			if strings.HasPrefix(target, "$") {
				targets = nil
				for _, e := range conf.mapOf(t, target).entries {
					targets = append(targets, e[1])
				}
			}
			for _, up := range targets {
				servers, ok := upstreams[up]
				if !ok {
					t.Fatalf("nginx.conf: :%d %s passes to %s, no upstream", port, path, up)
				}
				for _, s := range servers {
					out = append(out, gatewayRoute{port, path, s})
				}
			}
		}
	}
	return out
}

// publicPorts lists the ports the gateway listens on.
func publicPorts(t *testing.T, conf *nginxConf) []int {
	t.Helper()
	var ports []int
	for _, srv := range conf.http(t).blocks("server") {
		for _, l := range srv.all("listen") {
			p, err := strconv.Atoi(l[0])
			if err != nil {
				t.Fatalf("nginx.conf: listen %v", l)
			}
			ports = append(ports, p)
		}
	}
	slices.Sort(ports)
	return ports
}

// TestKubernetesRoutesMatchGateway: on Kubernetes requests take the same
// routes as under docker compose. The gateway Deployment runs nginx.conf
// and errors.conf byte for byte; every upstream of every location
// (WebSocket ones included) is a Service port reaching a pod port, and
// every port of the HTTP services' Services is some location's upstream;
// the Ingress gives every public port of the gateway exactly one host,
// passed whole to that port, and routes nothing else.
func TestKubernetesRoutesMatchGateway(t *testing.T) {
	conf := parseNginx(t, gatewayConfPath)
	routes := gatewayRoutes(t, conf)
	ports := publicPorts(t, conf)
	eachOverlay(t, func(t *testing.T, m *manifests) {
		gw := m.checkGatewayConfig(t)

		reached := map[string]bool{}
		for _, r := range routes {
			host, port, _ := strings.Cut(r.backend, ":")
			svc := m.service(host)
			if svc == nil {
				t.Errorf("%s: no Service %s", r, host)
				continue
			}
			i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == port })
			if i < 0 {
				t.Errorf("%s: Service %s has no port %s", r, host, port)
				continue
			}
			reached[host+":"+port] = true
			if pods := m.podsOf(svc.Spec.Selector); len(pods) != 1 || servicePort(pods[0], svc.Spec.Ports[i]) < 0 {
				t.Errorf("%s: Service %s port %s reaches no pod port", r, host, port)
			}
		}
		for _, name := range []string{"ingress", "query-api", "orderflow-relay"} {
			svc := m.service(name)
			if svc == nil {
				t.Errorf("no Service %s", name)
				continue
			}
			for _, p := range svc.Spec.Ports {
				if p.Name != "admin" && !reached[name+":"+strconv.Itoa(int(p.Port))] {
					t.Errorf("Service %s port %d (%s) is no upstream of the gateway", name, p.Port, p.Name)
				}
			}
		}

		var served []int
		for _, p := range gw.Spec.Ports {
			served = append(served, int(p.Port))
		}
		slices.Sort(served)
		if !slices.Equal(served, ports) {
			t.Errorf("Service gateway serves ports %v, nginx.conf listens on %v", served, ports)
		}
		m.checkIngressHosts(t, gw, ports)
	})
}

// checkGatewayConfig returns the gateway's Service after checking that
// its pods mount the ConfigMap holding deploy/gateway's files unchanged.
func (m *manifests) checkGatewayConfig(t *testing.T) *corev1.Service {
	t.Helper()
	gw := m.service("gateway")
	if gw == nil {
		t.Fatal("no Service gateway")
	}
	pods := m.podsOf(gw.Spec.Selector)
	if len(pods) != 1 {
		t.Fatalf("Service gateway selects %v", pods)
	}
	var cm *corev1.ConfigMap
	for _, v := range pods[0].pod.Spec.Volumes {
		if v.ConfigMap != nil {
			cm = m.configMap(v.ConfigMap.Name)
		}
	}
	if cm == nil {
		t.Fatalf("%s mounts no ConfigMap with the gateway's configuration", pods[0])
	}
	for _, file := range []string{"nginx.conf", "errors.conf"} {
		want, err := os.ReadFile(filepath.Join(filepath.Dir(gatewayConfPath), file))
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data[file] != string(want) {
			t.Errorf("ConfigMap %s: %s differs from deploy/gateway/%s", cm.Name, file, file)
		}
	}
	return gw
}

// checkIngressHosts: one host per public port, path / to that port of the
// gateway, and nothing else.
func (m *manifests) checkIngressHosts(t *testing.T, gw *corev1.Service, ports []int) {
	t.Helper()
	portOf := func(b *networkingv1.IngressServiceBackend) int {
		for _, p := range gw.Spec.Ports {
			if (b.Port.Name != "" && p.Name == b.Port.Name) || (b.Port.Number != 0 && p.Port == b.Port.Number) {
				return int(p.Port)
			}
		}
		return -1
	}
	hosts := map[int][]string{}
	for _, ing := range m.ingresses {
		if ing.Spec.DefaultBackend != nil {
			t.Errorf("Ingress %s has a default backend; nginx.conf serves only its ports", ing.Name)
		}
		for _, rule := range ing.Spec.Rules {
			if rule.HTTP == nil || len(rule.HTTP.Paths) != 1 {
				t.Errorf("Ingress %s host %s: want one path, / to the gateway", ing.Name, rule.Host)
				continue
			}
			p := rule.HTTP.Paths[0]
			b := p.Backend.Service
			pathType := networkingv1.PathType("")
			if p.PathType != nil {
				pathType = *p.PathType
			}
			if p.Path != "/" || pathType != networkingv1.PathTypePrefix || b == nil || b.Name != "gateway" {
				t.Errorf("Ingress %s host %s: path %s (%q) to %+v, want / (Prefix) to the gateway", ing.Name, rule.Host, p.Path, pathType, b)
				continue
			}
			port := portOf(b)
			if port < 0 {
				t.Errorf("Ingress %s host %s: gateway port %+v does not exist", ing.Name, rule.Host, b.Port)
			}
			hosts[port] = append(hosts[port], rule.Host)
		}
	}
	seen := map[string]bool{}
	for port, hs := range hosts {
		if !slices.Contains(ports, port) {
			t.Errorf("Ingress hosts %v go to gateway port %d, where nginx.conf has no server", hs, port)
		}
		for _, h := range hs {
			if h == "" || seen[h] {
				t.Errorf("Ingress host %q is empty or serves two ports", h)
			}
			seen[h] = true
		}
	}
	for _, port := range ports {
		if len(hosts[port]) != 1 {
			t.Errorf("nginx.conf port %d is the Ingress host of %v, want exactly one", port, hosts[port])
		}
	}
}

// TestKubernetesGatewayRender runs the gateway's render container script
// on nginx.conf: the resolver becomes the pod's nameserver with the
// real-IP settings, every upstream server the cluster name of a Service
// that exists, and no other line changes.
func TestKubernetesGatewayRender(t *testing.T) {
	original, err := os.ReadFile(gatewayConfPath)
	if err != nil {
		t.Fatal(err)
	}
	eachOverlay(t, func(t *testing.T, m *manifests) {
		var render *corev1.Container
		for _, d := range m.deployments {
			if d.Name == "gateway" && len(d.Spec.Template.Spec.InitContainers) == 1 {
				render = &d.Spec.Template.Spec.InitContainers[0]
			}
		}
		if render == nil || len(render.Command) != 2 || len(render.Args) != 1 {
			t.Fatalf("gateway: no render init container with a script")
		}
		dir := t.TempDir()
		configDir, outDir := filepath.Join(dir, "config"), filepath.Join(dir, "out")
		for _, d := range []string{configDir, outDir} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		copyTree(t, filepath.Dir(gatewayConfPath), configDir)
		resolv := filepath.Join(dir, "resolv.conf")
		if err := os.WriteFile(resolv, []byte("search exchange.svc.cluster.local\nnameserver 10.96.0.10\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		env := []string{"PATH=" + os.Getenv("PATH"), "CONFIG_DIR=" + configDir, "OUT_DIR=" + outDir, "RESOLV_CONF=" + resolv, "POD_NAMESPACE=exchange"}
		for _, e := range render.Env {
			if e.ValueFrom == nil {
				env = append(env, e.Name+"="+e.Value)
			}
		}
		var stderr bytes.Buffer
		cmd := exec.Command("sh", "-c", render.Args[0])
		cmd.Env, cmd.Stderr = env, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("render: %v\n%s", err, stderr.String())
		}
		rendered, err := os.ReadFile(filepath.Join(outDir, "nginx.conf"))
		if err != nil {
			t.Fatal(err)
		}
		before, after := strings.Split(string(original), "\n"), strings.Split(string(rendered), "\n")
		if len(before) != len(after) {
			t.Fatalf("render changed the line count: %d to %d", len(before), len(after))
		}
		resolvers, servers := 0, 0
		for i := range before {
			old, now := strings.TrimSpace(before[i]), strings.TrimSpace(after[i])
			switch {
			case strings.HasPrefix(old, "resolver "):
				resolvers++
				if !strings.HasPrefix(now, "resolver 10.96.0.10 valid=") || !strings.Contains(now, "real_ip_header X-Forwarded-For;") || !strings.Contains(now, "set_real_ip_from ") {
					t.Errorf("rendered resolver line %q", now)
				}
			case strings.HasPrefix(old, "server ") && strings.HasSuffix(old, " resolve;"):
				servers++
				host, port, _ := strings.Cut(strings.Fields(old)[1], ":")
				want := fmt.Sprintf("server %s.exchange.svc.cluster.local:%s resolve;", host, port)
				if now != want {
					t.Errorf("rendered %q, want %q", now, want)
				}
				if m.service(host) == nil {
					t.Errorf("upstream server %s is no Service", host)
				}
			case old != now:
				t.Errorf("render changed line %d: %q to %q", i+1, old, now)
			}
		}
		if resolvers != 1 || servers == 0 {
			t.Errorf("render saw %d resolver lines and %d upstream servers", resolvers, servers)
		}
	})
}
