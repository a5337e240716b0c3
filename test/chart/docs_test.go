package chart_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// schemaNode is the part of values.schema.json that says which values exist.
type schemaNode struct {
	Properties map[string]schemaNode `json:"properties"`
}

// valuePaths returns the dotted path of every value the schema defines
// (an object with properties is a group, not a value).
func valuePaths(prefix string, n schemaNode) []string {
	var out []string
	for name, child := range n.Properties {
		path := strings.TrimPrefix(prefix+"."+name, ".")
		if len(child.Properties) > 0 {
			out = append(out, valuePaths(path, child)...)
		} else {
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

// TestEveryValueIsDocumented checks that values.yaml, values.schema.json
// and the chart's README name the same values: helm lint (TestChartLints)
// checks that every value of values.yaml is in the schema; this checks that
// every value of the schema has a default in values.yaml and a line in the
// README's values reference.
func TestEveryValueIsDocumented(t *testing.T) {
	ch := loadChart(t)
	var schema schemaNode
	if err := json.Unmarshal(ch.Schema, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths := valuePaths("", schema)
	if len(paths) < 20 {
		t.Fatalf("the schema defines only %v", paths)
	}
	for _, path := range paths {
		if path == "global" {
			continue // Helm's, for subcharts
		}
		var v any = map[string]any(ch.Values)
		for _, key := range strings.Split(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				break
			}
			if v, ok = m[key]; !ok {
				t.Errorf("values.yaml has no default for %s", path)
				break
			}
		}
		if !strings.Contains(string(readme), "| `"+path+"` |") {
			t.Errorf("the chart's README.md values table has no row for `%s`", path)
		}
	}
}
