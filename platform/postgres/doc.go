// Package postgres is how the services use PostgreSQL: a connection pool
// with settings we want everywhere (Open), its metrics (NewPoolCollector)
// and a small versioned migration runner (Migrate). The private cluster of
// a developer machine and of tests is package devpostgres.
package postgres
