package kraft

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A node's log directory is formatted before its first start: Kafka's
// storage tool writes meta.properties (the cluster's id, the node's id and
// a random id of the directory itself) and bootstrap.checkpoint (the
// feature levels a new cluster starts with, metadata.version first, the
// same for every node of a release). The tool is a JVM of its own, about a
// second of CPU, and the tests start over a hundred brokers. So it runs once
// per machine, into a template in Config.Cache, and every node's log
// directory starts as a copy of the template with the three ids written
// anew.
//
// The copy is right only for a quorum of static voters
// (controller.quorum.voters), which is what properties configures: for a
// dynamic quorum the tool also writes a snapshot naming each voter's
// directory id.

// metaFile is the file a formatted log directory has and an unformatted
// one lacks; the broker refuses to start without it.
const metaFile = "meta.properties"

// templateScheme names the way the template is made: changing how it is
// formatted changes it, so that no cache keeps an old template.
const templateScheme = "static-voters-1"

// templateDir is where c's storage template lives: one per Kafka release
// and set of Props (the storage tool reads some properties, such as
// unstable.feature.versions.enable, to choose the feature levels).
func templateDir(c Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", templateScheme, Version)
	for _, k := range slices.Sorted(maps.Keys(c.Props)) {
		fmt.Fprintf(h, "%s=%s\n", k, c.Props[k])
	}
	return filepath.Join(c.Cache, "storage-"+hex.EncodeToString(h.Sum(nil))[:16])
}

// storageTemplate returns c's storage template, formatting it first if no
// process has. Test binaries running at once may all find it missing: each
// formats into a directory of its own and renames it into place, and the
// ones that lose the race use the winner's.
func storageTemplate(ctx context.Context, c Config) (string, error) {
	dir := templateDir(c)
	if _, err := os.Stat(filepath.Join(dir, metaFile)); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(c.Cache, 0o755); err != nil {
		return "", fmt.Errorf("kraft: storage template: %w", err)
	}
	tmp, err := os.MkdirTemp(c.Cache, "storage-*.tmp")
	if err != nil {
		return "", fmt.Errorf("kraft: storage template: %w", err)
	}
	defer os.RemoveAll(tmp)
	data, err := formatTemplate(ctx, c, tmp)
	if err != nil {
		return "", err
	}
	if err := os.Rename(data, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, metaFile)); serr == nil {
			return dir, nil
		}
		return "", fmt.Errorf("kraft: storage template: %w", err)
	}
	return dir, nil
}

// formatTemplate runs the storage tool on a node 1 in dir, alone in its
// quorum (the ports are never bound), and returns the log directory it
// formatted.
func formatTemplate(ctx context.Context, c Config, dir string) (string, error) {
	n := &Node{cfg: c, id: 1, dir: dir, port: 9092, controllerPort: 9093}
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte(properties(c, n, "1@127.0.0.1:9093")), 0o644); err != nil {
		return "", fmt.Errorf("kraft: storage template: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log4j2.yaml"), []byte(log4j2), 0o644); err != nil {
		return "", fmt.Errorf("kraft: storage template: %w", err)
	}
	args := append(jvmArgs(c, n), "kafka.tools.StorageTool", "format",
		"--cluster-id="+newClusterID(), "--config="+props)
	out, err := exec.CommandContext(ctx, c.Java, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kraft: storage template: format %s: %w\n%s", dir, err, out)
	}
	return filepath.Join(dir, "data"), nil
}

// formatted reports whether the log directory data has been formatted.
func formatted(data string) bool {
	_, err := os.Stat(filepath.Join(data, metaFile))
	return err == nil
}

// formatFrom makes data a copy of the storage template tmpl, formatted for
// node id of cluster clusterID with a new directory id. Whatever data held
// goes: without meta.properties it was never formatted, or its copy was
// interrupted, and meta.properties is written last, so that such a start
// copies again.
func formatFrom(tmpl, data, clusterID string, id int) error {
	meta, err := os.ReadFile(filepath.Join(tmpl, metaFile))
	if err != nil {
		return fmt.Errorf("format %s: %w", data, err)
	}
	meta, err = rewriteMeta(meta, map[string]string{
		"cluster.id":   clusterID,
		"node.id":      strconv.Itoa(id),
		"directory.id": newDirectoryID(),
	})
	if err != nil {
		return fmt.Errorf("format %s from %s: %w", data, tmpl, err)
	}
	if err := os.RemoveAll(data); err != nil {
		return fmt.Errorf("format %s: %w", data, err)
	}
	if err := os.CopyFS(data, os.DirFS(tmpl)); err != nil {
		return fmt.Errorf("format %s from %s: %w", data, tmpl, err)
	}
	// CopyFS wrote the template's meta.properties too, to be replaced.
	tmp := filepath.Join(data, metaFile+".tmp")
	if err := os.WriteFile(tmp, meta, 0o644); err != nil {
		return fmt.Errorf("format %s: %w", data, err)
	}
	if err := os.Rename(tmp, filepath.Join(data, metaFile)); err != nil {
		return fmt.Errorf("format %s: %w", data, err)
	}
	return nil
}

// rewriteMeta sets the values of keys in meta.properties, each of which
// must be there: a release that names them otherwise fails here, not in the
// broker.
func rewriteMeta(meta []byte, set map[string]string) ([]byte, error) {
	var out bytes.Buffer
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(meta))
	for sc.Scan() {
		line := sc.Text()
		if k, _, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			if v, ok := set[k]; ok {
				line, seen[k] = k+"="+v, true
			}
		}
		out.WriteString(line + "\n")
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if !seen[k] {
			return nil, fmt.Errorf("%s has no %s", metaFile, k)
		}
	}
	return out.Bytes(), sc.Err()
}

// newDirectoryID returns a random directory id in the form of a cluster id,
// never beginning with '-' (Kafka's own ids avoid those, which look like
// options on a command line).
func newDirectoryID() string {
	for {
		if id := newClusterID(); id[0] != '-' {
			return id
		}
	}
}
