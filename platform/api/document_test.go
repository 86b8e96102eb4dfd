package api

import (
	"fmt"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestDocumentHasNoEmptyValues catches flow-style text cut short by an
// unquoted comma ({description: 1 buy, 2 sell}): YAML reads the rest as
// extra keys without values, and readers of the document lose the text.
func TestDocumentHasNoEmptyValues(t *testing.T) {
	var doc any
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if child == nil && k != "example" && k != "default" {
					t.Errorf("%s: key %q has no value (an unquoted comma in flow text?)", path, k)
				}
				walk(path+"/"+k, child)
			}
		case []any:
			for i, child := range v {
				walk(fmt.Sprintf("%s/%d", path, i), child)
			}
		}
	}
	walk("", doc)
}
