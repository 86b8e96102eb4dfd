package cluster

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// composeFile is the part of docker-compose.yml the runner reads: each
// service's environment. yaml.v3 resolves the file's anchors and merge
// keys (`<<: *service-env`), so a service sees the shared variables too.
type composeFile struct {
	Services map[string]struct {
		Environment map[string]string `yaml:"environment"`
	} `yaml:"services"`
}

// ComposeEnv returns the environment docker-compose.yml gives each service,
// with compose's interpolation applied: ${VAR:-default} and ${VAR} take
// VAR from lookup (the runner's own environment), as `docker compose up`
// does, and $$ is a dollar. The runner starts every service with this
// environment and overrides only what names a container (addresses,
// brokers, the database, the key file), so the two shapes cannot drift.
func ComposeEnv(path string, lookup func(string) (string, bool)) (map[string]map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("compose env: %w", err)
	}
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("compose env: %s: %w", path, err)
	}
	out := make(map[string]map[string]string, len(f.Services))
	for name, svc := range f.Services {
		env := make(map[string]string, len(svc.Environment))
		for k, v := range svc.Environment {
			if env[k], err = interpolate(v, lookup); err != nil {
				return nil, fmt.Errorf("compose env: service %s, %s: %w", name, k, err)
			}
		}
		out[name] = env
	}
	return out, nil
}

var composeVar = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// interpolate applies compose's variable forms to v: ${VAR:-def} is VAR,
// or def when VAR is unset or empty; ${VAR} is VAR or empty; $$ is $.
// A dollar in any other form is refused rather than guessed at.
func interpolate(v string, lookup func(string) (string, bool)) (string, error) {
	if strings.Contains(composeVar.ReplaceAllString(v, ""), "$") {
		return "", fmt.Errorf("%q: only ${VAR}, ${VAR:-default} and $$ are understood", v)
	}
	return composeVar.ReplaceAllStringFunc(v, func(m string) string {
		if m == "$$" {
			return "$"
		}
		sub := composeVar.FindStringSubmatch(m)
		if val, _ := lookup(sub[1]); val != "" {
			return val
		}
		return sub[3]
	}), nil
}
