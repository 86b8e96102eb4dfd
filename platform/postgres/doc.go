// Package postgres is the one place the services get PostgreSQL from: a
// private embedded cluster for a developer machine and for tests
// (StartEmbedded), a connection pool with settings we want everywhere (Open),
// and a small versioned migration runner (Migrate).
//
// The embedded cluster uses the machine's PostgreSQL server binaries (Debian's
// /usr/lib/postgresql/<version>/bin); scripts/ensure-postgres.sh installs them.
// It relies on Linux process semantics (parent-death signal, /proc), as does
// the rest of the dev stack.
package postgres
