package deploy

// Tests of the Kubernetes manifests in kubernetes/: every overlay is built
// with `kubectl kustomize` (scripts/ensure-kubectl.sh installs Debian's
// kubectl 1.20 when none is on PATH) and each object decoded strictly into
// its Kubernetes API type, then checked against the binaries, the gateway
// and each other. KUBECTL names the kubectl binaries to build with,
// space-separated (default: kubectl), so one run can try an old and a new
// kustomize.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
)

var kubernetesOverlays = []string{"dev", "production"}

// imageBinaries maps each image of the project to the main package it is
// built from (deploy/docker/<name>.Dockerfile).
var imageBinaries = map[string]string{
	"blockspace/ingress":         "ingress/cmd/ingress",
	"blockspace/query-api":       "query-api/cmd/query-api",
	"blockspace/orderflow-relay": "orderflow-relay/cmd/orderflow-relay",
	"blockspace/matcher":         "matcher/cmd/matcher",
	"blockspace/settler":         "settler/cmd/settler",
	"blockspace/topicctl":        "deploy/cmd/topicctl",
}

// manifests is one built overlay, each object in its API type.
type manifests struct {
	namespaces   []corev1.Namespace
	configMaps   []corev1.ConfigMap
	secrets      []corev1.Secret
	services     []corev1.Service
	deployments  []appsv1.Deployment
	statefulSets []appsv1.StatefulSet
	jobs         []batchv1.Job
	ingresses    []networkingv1.Ingress
	budgets      []policyv1.PodDisruptionBudget
	autoscalers  []autoscalingv2.HorizontalPodAutoscaler
}

// workload is the pod template of a Deployment, StatefulSet or Job.
type workload struct {
	kind, name string
	replicas   *int32
	pod        corev1.PodTemplateSpec
}

func (w workload) String() string { return w.kind + "/" + w.name }

func (m *manifests) workloads() []workload {
	var out []workload
	for _, d := range m.deployments {
		out = append(out, workload{"Deployment", d.Name, d.Spec.Replicas, d.Spec.Template})
	}
	for _, s := range m.statefulSets {
		out = append(out, workload{"StatefulSet", s.Name, s.Spec.Replicas, s.Spec.Template})
	}
	for _, j := range m.jobs {
		out = append(out, workload{"Job", j.Name, nil, j.Spec.Template})
	}
	return out
}

// decodeStrict decodes one object's JSON into v, refusing unknown fields.
func decodeStrict(doc []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// decode appends the object of one document to the list of its kind.
func (m *manifests) decode(apiVersion, kind string, doc []byte) error {
	var err error
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		m.namespaces, err = decodeInto(m.namespaces, doc)
	case "v1 ConfigMap":
		m.configMaps, err = decodeInto(m.configMaps, doc)
	case "v1 Secret":
		m.secrets, err = decodeInto(m.secrets, doc)
	case "v1 Service":
		m.services, err = decodeInto(m.services, doc)
	case "apps/v1 Deployment":
		m.deployments, err = decodeInto(m.deployments, doc)
	case "apps/v1 StatefulSet":
		m.statefulSets, err = decodeInto(m.statefulSets, doc)
	case "batch/v1 Job":
		m.jobs, err = decodeInto(m.jobs, doc)
	case "networking.k8s.io/v1 Ingress":
		m.ingresses, err = decodeInto(m.ingresses, doc)
	case "policy/v1 PodDisruptionBudget":
		m.budgets, err = decodeInto(m.budgets, doc)
	case "autoscaling/v2 HorizontalPodAutoscaler":
		m.autoscalers, err = decodeInto(m.autoscalers, doc)
	default:
		return fmt.Errorf("%s %s is not a kind these manifests use", apiVersion, kind)
	}
	return err
}

func decodeInto[T any](list []T, doc []byte) ([]T, error) {
	var v T
	if err := decodeStrict(doc, &v); err != nil {
		return list, err
	}
	return append(list, v), nil
}

// kubectls returns the kubectl binaries to build with.
func kubectls(t *testing.T) []string {
	t.Helper()
	names := strings.Fields(os.Getenv("KUBECTL"))
	if len(names) == 0 {
		names = []string{"kubectl"}
	}
	for i, n := range names {
		path, err := exec.LookPath(n)
		if err != nil {
			t.Fatalf("%s not found (%v): run scripts/ensure-kubectl.sh", n, err)
		}
		names[i] = path
	}
	return names
}

// buildOverlay copies kubernetes/ and the gateway's files to a temporary
// tree, writes the overlay's secret files there (throwaway values of the
// right form) and returns what `kubectl kustomize` makes of it.
func buildOverlay(t *testing.T, kubectl, overlay string) *manifests {
	t.Helper()
	tree := t.TempDir()
	for _, dir := range []string{"kubernetes", "gateway"} {
		copyTree(t, dir, filepath.Join(tree, dir))
	}
	dir := filepath.Join(tree, "kubernetes", "overlays", overlay)
	writeSecretFiles(t, filepath.Join(dir, "secrets"))
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s kustomize overlays/%s: %v\n%s", kubectl, overlay, err, stderr.String())
	}
	m, err := parseManifests(stdout.Bytes())
	if err != nil {
		t.Fatalf("%s kustomize overlays/%s: %v", kubectl, overlay, err)
	}
	return m
}

// parseManifests decodes a multi-document YAML stream.
func parseManifests(data []byte) (*manifests, error) {
	m := &manifests{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return nil, err
		}
		if obj == nil {
			continue
		}
		doc, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		apiVersion, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		name := ""
		if meta, ok := obj["metadata"].(map[string]any); ok {
			name, _ = meta["name"].(string)
		}
		if err := m.decode(apiVersion, kind, doc); err != nil {
			return nil, fmt.Errorf("%s %s: %w", kind, name, err)
		}
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeSecretFiles writes the four files docs/deploy.md "Kubernetes" has
// an operator make: a database URL, a P-256 signing key, and the two chain
// keys left empty (off).
func writeSecretFiles(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"database-url":          []byte("postgres://exchange:test@postgres:5432/exchange?sslmode=disable"),
		"auth-signing-key.pem":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
		"withdraw-operator-key": nil,
		"refund-payer-key":      nil,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// builtOverlays keeps each build for the tests after the first: the checks
// only read the objects.
var builtOverlays sync.Map // kubectl + " " + overlay -> *manifests

// eachOverlay runs check on every overlay built with every kubectl.
func eachOverlay(t *testing.T, check func(t *testing.T, m *manifests)) {
	for _, overlay := range kubernetesOverlays {
		forOverlay(t, overlay, check)
	}
}

// forOverlay runs check on one overlay built with every kubectl.
func forOverlay(t *testing.T, overlay string, check func(t *testing.T, m *manifests)) {
	for _, kubectl := range kubectls(t) {
		t.Run(kubectlVersion(t, kubectl)+"/"+overlay, func(t *testing.T) {
			key := kubectl + " " + overlay
			m, ok := builtOverlays.Load(key)
			if !ok {
				m, _ = builtOverlays.LoadOrStore(key, buildOverlay(t, kubectl, overlay))
			}
			check(t, m.(*manifests))
		})
	}
}

func kubectlVersion(t *testing.T, kubectl string) string {
	t.Helper()
	out, err := exec.Command(kubectl, "version", "--client", "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s version: %v", kubectl, err)
	}
	var v struct {
		ClientVersion struct{ GitVersion string } `json:"clientVersion"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s version: %v", kubectl, err)
	}
	return v.ClientVersion.GitVersion
}

// TestKubernetesManifestsDecode: every overlay builds, every object is of a
// known kind and decodes strictly, and the workloads the exchange needs are
// there, the matcher and the settler as StatefulSets.
func TestKubernetesManifestsDecode(t *testing.T) {
	eachOverlay(t, func(t *testing.T, m *manifests) {
		want := map[string]string{
			"ingress": "Deployment", "query-api": "Deployment", "orderflow-relay": "Deployment", "gateway": "Deployment",
			"matcher": "StatefulSet", "settler": "StatefulSet", "topics": "Job", "migrate": "Job",
		}
		got := map[string]string{}
		for _, w := range m.workloads() {
			got[w.name] = w.kind
		}
		if !maps.Equal(got, want) {
			t.Errorf("workloads %v, want %v", got, want)
		}
		if len(m.ingresses) != 1 || len(m.namespaces) != 1 {
			t.Errorf("%d Ingresses and %d Namespaces, want one of each", len(m.ingresses), len(m.namespaces))
		}
	})
}

// TestKubernetesEnvironmentIsRead: every variable a manifest sets on a
// container of the project's images, directly or through envFrom, is one
// its binary reads (derived from the binary's source).
func TestKubernetesEnvironmentIsRead(t *testing.T) {
	root := repoRoot(t)
	reads := map[string]map[string]bool{}
	for image, dir := range imageBinaries {
		reads[image] = envVarsRead(t, root, dir)
	}
	eachOverlay(t, func(t *testing.T, m *manifests) {
		for _, w := range m.workloads() {
			for _, c := range containers(w.pod) {
				image := imageName(c.Image)
				read, ok := reads[image]
				if !ok {
					if !strings.HasPrefix(image, "nginx") {
						t.Errorf("%s container %s: image %s is none of the project's", w, c.Name, c.Image)
					}
					continue
				}
				for _, name := range m.containerEnvNames(t, w, c) {
					if !read[name] {
						t.Errorf("%s container %s sets %s, which %s does not read", w, c.Name, name, imageBinaries[image])
					}
				}
			}
		}
	})
}

func containers(pod corev1.PodTemplateSpec) []corev1.Container {
	return append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
}

func imageName(image string) string {
	name, _, _ := strings.Cut(image, ":")
	return name
}

// containerEnvNames lists the variables a container gets: env and every
// key of the ConfigMaps and Secrets of envFrom.
func (m *manifests) containerEnvNames(t *testing.T, w workload, c corev1.Container) []string {
	t.Helper()
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			if cm := m.configMap(from.ConfigMapRef.Name); cm != nil {
				names = append(names, slices.Collect(maps.Keys(cm.Data))...)
			} else {
				t.Errorf("%s container %s: envFrom ConfigMap %s does not exist", w, c.Name, from.ConfigMapRef.Name)
			}
		case from.SecretRef != nil:
			if s := m.secret(from.SecretRef.Name); s != nil {
				names = append(names, slices.Collect(maps.Keys(s.Data))...)
			} else {
				t.Errorf("%s container %s: envFrom Secret %s does not exist", w, c.Name, from.SecretRef.Name)
			}
		}
	}
	return names
}

// containerEnv resolves a variable of a container to its value: env first
// (literal or ConfigMap key), then envFrom ConfigMaps.
func (m *manifests) containerEnv(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name != name {
			continue
		}
		if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			if cm := m.configMap(e.ValueFrom.ConfigMapKeyRef.Name); cm != nil {
				v, ok := cm.Data[e.ValueFrom.ConfigMapKeyRef.Key]
				return v, ok
			}
			return "", false
		}
		return e.Value, e.ValueFrom == nil
	}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			if cm := m.configMap(from.ConfigMapRef.Name); cm != nil {
				if v, ok := cm.Data[name]; ok {
					return v, true
				}
			}
		}
	}
	return "", false
}

func (m *manifests) configMap(name string) *corev1.ConfigMap {
	for i := range m.configMaps {
		if m.configMaps[i].Name == name {
			return &m.configMaps[i]
		}
	}
	return nil
}

func (m *manifests) secret(name string) *corev1.Secret {
	for i := range m.secrets {
		if m.secrets[i].Name == name {
			return &m.secrets[i]
		}
	}
	return nil
}

func (m *manifests) service(name string) *corev1.Service {
	for i := range m.services {
		if m.services[i].Name == name {
			return &m.services[i]
		}
	}
	return nil
}

// TestKubernetesReferencesResolve: every ConfigMap and Secret a workload
// names (envFrom, env, volumes) exists with the key it takes.
func TestKubernetesReferencesResolve(t *testing.T) {
	eachOverlay(t, func(t *testing.T, m *manifests) {
		hasKey := func(data map[string]string, key string) bool { _, ok := data[key]; return ok }
		secretKeys := func(s *corev1.Secret) map[string]string {
			out := map[string]string{}
			for k, v := range s.Data {
				out[k] = string(v)
			}
			return out
		}
		for _, w := range m.workloads() {
			ref := func(kind, name, key string) {
				var data map[string]string
				switch kind {
				case "ConfigMap":
					if cm := m.configMap(name); cm != nil {
						data = cm.Data
					}
				case "Secret":
					if s := m.secret(name); s != nil {
						data = secretKeys(s)
					}
				}
				if data == nil {
					t.Errorf("%s names %s %s, which does not exist", w, kind, name)
				} else if key != "" && !hasKey(data, key) {
					t.Errorf("%s names key %s of %s %s, which has no such key", w, key, kind, name)
				}
			}
			for _, c := range containers(w.pod) {
				for _, from := range c.EnvFrom {
					if from.ConfigMapRef != nil {
						ref("ConfigMap", from.ConfigMapRef.Name, "")
					}
					if from.SecretRef != nil {
						ref("Secret", from.SecretRef.Name, "")
					}
				}
				for _, e := range c.Env {
					if e.ValueFrom == nil {
						continue
					}
					if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
						ref("ConfigMap", r.Name, r.Key)
					}
					if r := e.ValueFrom.SecretKeyRef; r != nil {
						ref("Secret", r.Name, r.Key)
					}
				}
			}
			for _, v := range w.pod.Spec.Volumes {
				if v.ConfigMap != nil {
					ref("ConfigMap", v.ConfigMap.Name, "")
				}
				if v.Secret != nil {
					ref("Secret", v.Secret.SecretName, "")
				}
			}
		}
	})
}

// TestKubernetesFileSecrets: a variable that names a file (*_FILE) names
// a file of a Secret volume the container mounts.
func TestKubernetesFileSecrets(t *testing.T) {
	eachOverlay(t, func(t *testing.T, m *manifests) {
		for _, w := range m.workloads() {
			for _, c := range w.pod.Spec.Containers {
				for _, e := range c.Env {
					if !strings.HasSuffix(e.Name, "_FILE") {
						continue
					}
					if !m.mountsSecretFile(w, c, e.Value) {
						t.Errorf("%s container %s: %s=%s is no file of a mounted Secret", w, c.Name, e.Name, e.Value)
					}
				}
			}
		}
	})
}

func (m *manifests) mountsSecretFile(w workload, c corev1.Container, path string) bool {
	for _, mount := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(mount.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range w.pod.Spec.Volumes {
			if v.Name == mount.Name && v.Secret != nil {
				if s := m.secret(v.Secret.SecretName); s != nil {
					_, ok := s.Data[rel]
					return ok
				}
			}
		}
	}
	return false
}

// TestKubernetesProbes: each long-running service is probed on its admin
// port (ADMIN_ADDR): readiness on /readyz, liveness and startup on
// /healthz, and is given longer to stop than SHUTDOWN_GRACE.
func TestKubernetesProbes(t *testing.T) {
	eachOverlay(t, func(t *testing.T, m *manifests) {
		for _, w := range m.workloads() {
			if w.kind == "Job" {
				continue
			}
			for _, c := range w.pod.Spec.Containers {
				if _, ours := imageBinaries[imageName(c.Image)]; !ours {
					continue
				}
				addr, _ := m.containerEnv(c, "ADMIN_ADDR")
				_, portText, err := splitHostPort(addr)
				if err != nil {
					t.Errorf("%s: ADMIN_ADDR %q: %v", w, addr, err)
					continue
				}
				admin, _ := strconv.Atoi(portText)
				for _, p := range []struct {
					kind, path string
					probe      *corev1.Probe
					required   bool
				}{
					{"readiness", "/readyz", c.ReadinessProbe, true},
					{"liveness", "/healthz", c.LivenessProbe, true},
					{"startup", "/healthz", c.StartupProbe, false},
				} {
					if p.probe == nil {
						if p.required {
							t.Errorf("%s: no %s probe", w, p.kind)
						}
						continue
					}
					get := p.probe.HTTPGet
					if get == nil || get.Path != p.path || containerPort(c, get.Port.String()) != admin {
						t.Errorf("%s: %s probe %+v, want GET %s on the admin port %d", w, p.kind, get, p.path, admin)
					}
				}
				graceText, _ := m.containerEnv(c, "SHUTDOWN_GRACE")
				grace, err := time.ParseDuration(graceText)
				if err != nil {
					t.Errorf("%s: SHUTDOWN_GRACE %q: %v", w, graceText, err)
					continue
				}
				period := time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
				if p := w.pod.Spec.TerminationGracePeriodSeconds; p != nil {
					period = time.Duration(*p) * time.Second
				}
				if period <= grace {
					t.Errorf("%s: terminationGracePeriodSeconds %s is not above SHUTDOWN_GRACE %s", w, period, grace)
				}
			}
		}
	})
}

func splitHostPort(addr string) (string, string, error) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", "", errors.New("no port")
	}
	if _, err := strconv.Atoi(addr[i+1:]); err != nil {
		return "", "", err
	}
	return addr[:i], addr[i+1:], nil
}

// containerPort resolves a port name or number of a container; -1 when the
// container has no such port.
func containerPort(c corev1.Container, port string) int {
	for _, p := range c.Ports {
		if p.Name == port || strconv.Itoa(int(p.ContainerPort)) == port {
			return int(p.ContainerPort)
		}
	}
	return -1
}

// podsOf returns the workloads whose pods carry every label of selector.
func (m *manifests) podsOf(selector map[string]string) []workload {
	var out []workload
	for _, w := range m.workloads() {
		if len(selector) > 0 && isSubset(selector, w.pod.Labels) {
			out = append(out, w)
		}
	}
	return out
}

func isSubset(sub, of map[string]string) bool {
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return true
}

// servicePort returns the container port a Service's port reaches on the
// pods of w, or -1.
func servicePort(w workload, p corev1.ServicePort) int {
	for _, c := range w.pod.Spec.Containers {
		if n := containerPort(c, p.TargetPort.String()); n >= 0 {
			return n
		}
	}
	return -1
}

// TestKubernetesSelectorsMatch: every Service selects the pods of exactly
// one workload and each of its ports reaches a port of theirs; every
// PodDisruptionBudget selects exactly one workload; every autoscaler
// scales a Deployment of a stateless service, never the matcher or the
// settler.
func TestKubernetesSelectorsMatch(t *testing.T) {
	eachOverlay(t, func(t *testing.T, m *manifests) {
		for _, s := range m.services {
			pods := m.podsOf(s.Spec.Selector)
			if len(pods) != 1 {
				t.Errorf("Service %s selects %v, want one workload", s.Name, pods)
				continue
			}
			for _, p := range s.Spec.Ports {
				if servicePort(pods[0], p) < 0 {
					t.Errorf("Service %s port %s targets %s, which %s does not expose", s.Name, p.Name, p.TargetPort.String(), pods[0])
				}
			}
		}
		for _, b := range m.budgets {
			if b.Spec.Selector == nil || len(m.podsOf(b.Spec.Selector.MatchLabels)) != 1 {
				t.Errorf("PodDisruptionBudget %s selects %v, want one workload", b.Name, b.Spec.Selector)
			}
		}
		for _, w := range m.workloads() {
			if w.kind == "Job" {
				continue
			}
			n := 0
			for _, b := range m.budgets {
				if b.Spec.Selector != nil && isSubset(b.Spec.Selector.MatchLabels, w.pod.Labels) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s is covered by %d PodDisruptionBudgets, want 1", w, n)
			}
		}
		var scaled []string
		for _, a := range m.autoscalers {
			scaled = append(scaled, a.Spec.ScaleTargetRef.Kind+"/"+a.Spec.ScaleTargetRef.Name)
		}
		slices.Sort(scaled)
		if want := []string{"Deployment/ingress", "Deployment/query-api"}; !slices.Equal(scaled, want) {
			t.Errorf("autoscalers scale %v, want exactly %v", scaled, want)
		}
	})
}

// TestKubernetesInstanceIDs: the matcher and the settler take their pod's
// name, stable in a StatefulSet, as instance id; the matcher joins its
// group as a static member.
func TestKubernetesInstanceIDs(t *testing.T) {
	eachOverlay(t, func(t *testing.T, m *manifests) {
		want := map[string][]string{"matcher": {"MATCHER_INSTANCE_ID"}, "settler": {"SETTLER_INSTANCE_ID"}}
		for _, s := range m.statefulSets {
			vars, ok := want[s.Name]
			if !ok {
				t.Errorf("StatefulSet %s: only the matcher and the settler need stable ids", s.Name)
				continue
			}
			delete(want, s.Name)
			c := s.Spec.Template.Spec.Containers[0]
			for _, v := range vars {
				i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == v })
				if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil || c.Env[i].ValueFrom.FieldRef.FieldPath != "metadata.name" {
					t.Errorf("StatefulSet %s: %s is not the pod's name", s.Name, v)
				}
			}
			if s.Name == "matcher" {
				if v, _ := m.containerEnv(c, "MATCHER_STATIC_MEMBER"); v != "true" {
					t.Errorf("StatefulSet matcher: MATCHER_STATIC_MEMBER=%q, want true", v)
				}
			}
		}
		if len(want) > 0 {
			t.Errorf("no StatefulSet for %v", slices.Collect(maps.Keys(want)))
		}
	})
}

// TestKubernetesOverlayShapes: dev runs one pod of everything; production
// runs the production shape's replicas (docs/deploy.md: two matchers, two
// query-api, one settler; two of each HTTP edge) with the pods of each
// workload kept apart, and autoscales the edges from two.
func TestKubernetesOverlayShapes(t *testing.T) {
	forOverlay(t, "dev", func(t *testing.T, m *manifests) {
		for _, w := range m.workloads() {
			if w.kind != "Job" && (w.replicas == nil || *w.replicas != 1) {
				t.Errorf("dev: %s has %s replicas, want 1", w, count(w.replicas))
			}
		}
	})
	want := map[string]int32{"ingress": 2, "query-api": 2, "orderflow-relay": 1, "matcher": 2, "settler": 1, "gateway": 2}
	forOverlay(t, "production", func(t *testing.T, m *manifests) {
		for _, w := range m.workloads() {
			if w.kind == "Job" {
				continue
			}
			if w.replicas == nil || *w.replicas != want[w.name] {
				t.Errorf("production: %s has %s replicas, want %d", w, count(w.replicas), want[w.name])
			}
			if !spreadsOwnPods(w) {
				t.Errorf("production: %s has no pod anti-affinity to its own pods", w)
			}
		}
		for _, a := range m.autoscalers {
			if a.Spec.MinReplicas == nil || *a.Spec.MinReplicas != want[a.Spec.ScaleTargetRef.Name] {
				t.Errorf("production: autoscaler %s starts at %s, want the replicas %d", a.Name, count(a.Spec.MinReplicas), want[a.Spec.ScaleTargetRef.Name])
			}
		}
	})
}

func spreadsOwnPods(w workload) bool {
	aff := w.pod.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil {
		return false
	}
	for _, term := range aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		sel := term.PodAffinityTerm.LabelSelector
		if term.PodAffinityTerm.TopologyKey == "kubernetes.io/hostname" && sel != nil && len(sel.MatchLabels) > 0 && isSubset(sel.MatchLabels, w.pod.Labels) {
			return true
		}
	}
	return false
}

// count prints an optional count; unset is Kubernetes' default of 1.
func count(n *int32) string {
	if n == nil {
		return "unset (1)"
	}
	return strconv.Itoa(int(*n))
}
