package kraft

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRewriteMeta(t *testing.T) {
	const meta = "#\n#Fri Nov 27 20:13:10 UTC 2026\nnode.id=1\ndirectory.id=RLoU-ptHr6Fbftgyp0_P6g\nversion=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n"
	for name, tc := range map[string]struct {
		meta    string
		set     map[string]string
		want    string
		wantErr string
	}{
		"ids replaced, the rest kept": {
			meta: meta,
			set:  map[string]string{"node.id": "3", "cluster.id": "-_BBBBBBBBBBBBBBBBBBBB", "directory.id": "CCCCCCCCCCCCCCCCCCCCCC"},
			want: "#\n#Fri Nov 27 20:13:10 UTC 2026\nnode.id=3\ndirectory.id=CCCCCCCCCCCCCCCCCCCCCC\nversion=1\ncluster.id=-_BBBBBBBBBBBBBBBBBBBB\n",
		},
		"a comment that looks like a key stays": {
			meta: "#node.id=1\nnode.id=1\n",
			set:  map[string]string{"node.id": "2"},
			want: "#node.id=1\nnode.id=2\n",
		},
		"a key the release does not write": {
			meta:    meta,
			set:     map[string]string{"node.id": "2", "broker.id": "2"},
			wantErr: "has no broker.id",
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := rewriteMeta([]byte(tc.meta), tc.set)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("rewriteMeta: %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("rewriteMeta:\n%s(err %v)\nwant:\n%s", got, err, tc.want)
			}
		})
	}
}

// Test binaries that find no template at once each format one; all end
// up using the same, complete template, and leave nothing else behind.
func TestStorageTemplateRacesSafely(t *testing.T) {
	cfg, err := TestConfig(t.TempDir()).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cache = t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	dirs := make([]string, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Go(func() { dirs[i], errs[i] = storageTemplate(ctx, cfg) })
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if dirs[i] != dirs[0] {
			t.Fatalf("templates %s and %s", dirs[0], dirs[i])
		}
	}
	for _, f := range []string{metaFile, "bootstrap.checkpoint"} {
		if _, err := os.Stat(filepath.Join(dirs[0], f)); err != nil {
			t.Errorf("template: %v", err)
		}
	}
	entries, err := os.ReadDir(cfg.Cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(dirs[0]) {
		t.Errorf("cache holds %v, want only %s", entries, filepath.Base(dirs[0]))
	}
}

// A template made for other properties is another template: the storage
// tool reads some of them.
func TestStorageTemplateIsKeyedByProps(t *testing.T) {
	a := Config{Cache: "c", Props: map[string]string{"x": "1"}}
	b := Config{Cache: "c", Props: map[string]string{"x": "2"}}
	if templateDir(a) == templateDir(b) {
		t.Fatalf("both %s", templateDir(a))
	}
	if templateDir(a) != templateDir(Config{Cache: "c", Props: map[string]string{"x": "1"}}) {
		t.Fatal("the same properties give another template")
	}
}
