package httpx

import (
	"sort"
	"strings"
)

// Route is one method and path template of the REST interface, with path
// parameters written as {name}.
type Route struct {
	Method string
	Path   string
}

// routeTable answers which methods the interface defines for a concrete
// path. Ingress and query-api each serve part of one REST base address; a
// gateway routes by method, so each service must know the whole interface
// to answer "wrong method" (400) instead of "no such path" (404).
type routeTable struct {
	methods map[string][]string // template → methods
}

func newRouteTable(routes []Route) routeTable {
	t := routeTable{methods: make(map[string][]string)}
	for _, r := range routes {
		t.methods[r.Path] = append(t.methods[r.Path], r.Method)
	}
	for _, m := range t.methods {
		sort.Strings(m)
	}
	return t
}

// allowed returns the methods defined for path, or nil for an unknown path.
func (t routeTable) allowed(path string) []string {
	if m, ok := t.methods[path]; ok {
		return m
	}
	for tmpl, m := range t.methods {
		if matchTemplate(tmpl, path) {
			return m
		}
	}
	return nil
}

func matchTemplate(tmpl, path string) bool {
	if !strings.Contains(tmpl, "{") {
		return false
	}
	ts := strings.Split(strings.Trim(tmpl, "/"), "/")
	ps := strings.Split(strings.Trim(path, "/"), "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if strings.HasPrefix(ts[i], "{") {
			if ps[i] == "" {
				return false
			}
			continue
		}
		if ts[i] != ps[i] {
			return false
		}
	}
	return true
}

// GinPath converts an interface template (/a/{id}) to gin's syntax (/a/:id).
func GinPath(tmpl string) string {
	return strings.NewReplacer("{", ":", "}", "").Replace(tmpl)
}

// TemplatePath converts gin's syntax (/a/:id) to an interface template.
func TemplatePath(ginPath string) string {
	parts := strings.Split(ginPath, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
			parts[i] = "{" + p[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}
