// Package devpostgres runs a private PostgreSQL cluster as a child process,
// for a developer machine (the dev stack, deploy/cluster) and for tests
// (postgres/pgtest). No service binary links it: in production the
// services reach their database through DATABASE_URL alone.
//
// The cluster uses the machine's PostgreSQL server binaries (Debian's
// /usr/lib/postgresql/<version>/bin); scripts/ensure-postgres.sh installs them.
// It relies on Linux process semantics (parent-death signal, /proc), as does
// the rest of the dev stack.
package devpostgres
