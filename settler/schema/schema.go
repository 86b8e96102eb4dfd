// Package schema holds the Postgres schema of the exchange as versioned
// SQL migrations. The settler owns the ledger, and with it the schema;
// every other service reads what these migrations create.
package schema

import (
	"embed"
	"io/fs"
)

//go:embed migrations/*.sql
var files embed.FS

// Migrations returns the migration files, named NNNN_name.sql, at the root
// of the returned file system.
func Migrations() fs.FS {
	sub, err := fs.Sub(files, "migrations")
	if err != nil {
		panic(err) // the embedded directory exists at build time
	}
	return sub
}
