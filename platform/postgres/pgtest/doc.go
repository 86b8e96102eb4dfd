// Package pgtest gives tests real PostgreSQL databases.
//
// New returns a pool on a fresh database with the migrations applied; each
// call gets its own database, so tests may run in parallel. The server is the
// one named by TEST_DATABASE_URL (a postgres:// URL of a role that may create
// databases) or, when that is unset, one ephemeral embedded cluster started on
// first use and shared by all tests of the test binary. Wire Main into
// TestMain so that the cluster is stopped and its files removed at the end:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Without Main the cluster still dies with the test binary (it gets a
// parent-death signal), but its temporary directory is left behind.
//
// Server starts a private cluster for one test that needs to stop and restart
// PostgreSQL, for example to prove that a service answers 503 while the
// database is down, without disturbing the tests that share the other one.
package pgtest
