package kraft

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Cluster is a running set of local nodes.
type Cluster struct {
	cfg   Config
	nodes []*Node
}

// Start formats (first time only) and starts every node of cfg, and returns
// once each node's broker answers. On an error every node started is
// stopped again.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("kraft: %w", err)
	}
	if cfg.archiveOut == "" {
		cfg = cfg.withArchive()
	}
	clusterID, err := readOrCreate(filepath.Join(cfg.Dir, "cluster-id"), newClusterID)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg}
	for i := range cfg.Nodes {
		c.nodes = append(c.nodes, &Node{cfg: cfg, id: i + 1, dir: filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", i+1))})
	}
	// Ports the caller did not fix are chosen free; another process may
	// take one before the broker binds it, and then all are chosen again.
	for attempt := 1; ; attempt++ {
		if err := c.assignPorts(); err != nil {
			return nil, err
		}
		err = c.start(ctx, clusterID)
		if err == nil {
			return c, nil
		}
		_ = c.Close()
		if len(cfg.Addrs) != 0 || attempt == 3 || !c.anyPortTaken() {
			return nil, err
		}
	}
}

func (c *Cluster) start(ctx context.Context, clusterID string) error {
	if err := c.prepare(ctx, clusterID); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := n.launch(); err != nil {
			return err
		}
	}
	// A broker registers only once the controller quorum has a leader,
	// which needs a majority of the nodes up: launch all, then wait.
	for _, n := range c.nodes {
		if err := n.waitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// prepare writes every node's configuration and gives the nodes that have
// never run a log directory formatted for the cluster, copied from the
// storage template. A node that ran before keeps its data.
func (c *Cluster) prepare(ctx context.Context, clusterID string) error {
	var tmpl string
	for _, n := range c.nodes {
		if err := n.writeConfig(); err != nil {
			return err
		}
		if formatted(n.dataDir()) {
			continue
		}
		var err error
		if tmpl == "" {
			if tmpl, err = storageTemplate(ctx, c.cfg); err != nil {
				return err
			}
		}
		if err := formatFrom(tmpl, n.dataDir(), clusterID, n.id); err != nil {
			return fmt.Errorf("kraft: node %d: %w", n.id, err)
		}
	}
	return nil
}

// assignPorts gives every node its client port (Config.Addrs or a free
// one) and a free controller port, and tells each node the quorum. The
// ports are held until all are chosen, so that the kernel never hands out
// one of them twice.
func (c *Cluster) assignPorts() error {
	var held portSet
	defer held.release()
	var voters []string
	for i, n := range c.nodes {
		if len(c.cfg.Addrs) != 0 {
			_, port, _ := strings.Cut(c.cfg.Addrs[i], ":")
			n.port, _ = strconv.Atoi(port)
		}
		var err error
		if n.port == 0 || len(c.cfg.Addrs) == 0 {
			if n.port, err = held.take(); err != nil {
				return err
			}
		}
		if n.controllerPort, err = held.take(); err != nil {
			return err
		}
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", n.id, n.controllerPort))
	}
	for _, n := range c.nodes {
		n.voters = strings.Join(voters, ",")
	}
	return nil
}

func (c *Cluster) anyPortTaken() bool {
	for _, n := range c.nodes {
		if n.portTaken() {
			return true
		}
	}
	return false
}

// readOrCreate returns the trimmed content of path, writing make's value
// there first if the file does not exist.
func readOrCreate(path string, make func() string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("kraft: %w", err)
	}
	v := make()
	if err := os.WriteFile(path, []byte(v+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("kraft: %w", err)
	}
	return v, nil
}

// Addrs are the nodes' client listeners, in node order.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

// Nodes returns the cluster's nodes in node.id order (node 1 first).
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns the node with the given node.id.
func (c *Cluster) Node(id int) *Node { return c.nodes[id-1] }

// StopTimeout is how long Close gives each node's controlled shutdown
// before killing it.
const StopTimeout = 30 * time.Second

// Close stops every node in order, the last first (so that the others keep
// a quorum while brokers hand their partitions over), and reports the
// first node that had to be killed.
func (c *Cluster) Close() error {
	var errs []error
	for i := len(c.nodes) - 1; i >= 0; i-- {
		errs = append(errs, c.nodes[i].Stop(StopTimeout))
	}
	return errors.Join(errs...)
}
