// Package api holds the OpenAPI document of the REST interface. It is the
// single list of routes: services read it to tell a wrong method from an
// unknown path, and a test compares it with the routes actually served.
package api

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"blockspace.exchange/platform/httpx"
)

// OpenAPI is the OpenAPI 3.1 document, served at /api/v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte

var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "patch": true, "head": true, "options": true}

// Routes lists every method and path the document defines, sorted.
func Routes() ([]httpx.Route, error) {
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		return nil, fmt.Errorf("parse openapi.yaml: %w", err)
	}
	var routes []httpx.Route
	for path, ops := range doc.Paths {
		for method := range ops {
			if httpMethods[method] {
				routes = append(routes, httpx.Route{Method: strings.ToUpper(method), Path: path})
			}
		}
	}
	sort.Slice(routes, func(i, j int) bool {
		if routes[i].Path != routes[j].Path {
			return routes[i].Path < routes[j].Path
		}
		return routes[i].Method < routes[j].Method
	})
	return routes, nil
}

// MustRoutes is Routes for program start, where a broken embedded
// document is a build defect.
func MustRoutes() []httpx.Route {
	r, err := Routes()
	if err != nil {
		panic(err)
	}
	return r
}
