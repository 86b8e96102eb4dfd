package devpostgres

import "path/filepath"

// layout names the files inside Config.DataDir. The PostgreSQL data
// directory is a subdirectory so that initdb gets the empty directory it
// insists on, and so that our own files never mix with the server's.
type layout struct {
	root string
}

// cluster is PGDATA.
func (l layout) cluster() string { return filepath.Join(l.root, "cluster") }

// clusterTmp is where initdb writes before the result is renamed to cluster,
// so a crash during initdb never leaves a half-made cluster behind.
func (l layout) clusterTmp() string { return filepath.Join(l.root, "cluster.initdb") }

// socketDir holds the unix socket, private to the cluster's owner.
func (l layout) socketDir() string { return filepath.Join(l.root, "run") }

// logFile receives the output of initdb and postgres.
func (l layout) logFile() string { return filepath.Join(l.root, "postgres.log") }

// portFile remembers the last port so that a restart keeps its URL.
func (l layout) portFile() string { return filepath.Join(l.root, "port") }

// pidFile is the postmaster's lock file.
func (l layout) pidFile() string { return filepath.Join(l.cluster(), "postmaster.pid") }
