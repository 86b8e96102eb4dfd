package postgres

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// migrationName is NNNN_name.sql: the number orders the files and is the
// version recorded in schema_migrations.
var migrationName = regexp.MustCompile(`^(\d{4,})_([A-Za-z0-9_\-]+)\.sql$`)

// migration is one SQL file of a migration set.
type migration struct {
	version  int64
	file     string // base name, e.g. 0001_accounts.sql
	sql      string
	checksum string // hex SHA-256 of the file
}

// loadMigrations reads the *.sql files at the root of fsys in version order.
// Other files (a README) are ignored; a .sql file with a malformed name or a
// duplicate version is an error, because silently skipping it would leave
// the schema behind.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var migrations []migration
	for _, entry := range entries {
		if entry.IsDir() || path.Ext(entry.Name()) != ".sql" {
			continue
		}
		m, err := loadMigration(fsys, entry.Name())
		if err != nil {
			return nil, err
		}
		migrations = append(migrations, m)
	}
	slices.SortFunc(migrations, func(a, b migration) int { return cmp.Compare(a.version, b.version) })
	for i := 1; i < len(migrations); i++ {
		if migrations[i].version == migrations[i-1].version {
			return nil, fmt.Errorf("read migrations: %s and %s have the same version", migrations[i-1].file, migrations[i].file)
		}
	}
	return migrations, nil
}

func loadMigration(fsys fs.FS, file string) (migration, error) {
	match := migrationName.FindStringSubmatch(file)
	if match == nil {
		return migration{}, fmt.Errorf("read migrations: %s: name must look like 0001_create_accounts.sql", file)
	}
	version, err := strconv.ParseInt(match[1], 10, 64)
	if err != nil {
		return migration{}, fmt.Errorf("read migrations: %s: %w", file, err)
	}
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return migration{}, fmt.Errorf("read migrations: %w", err)
	}
	sum := sha256.Sum256(data)
	return migration{version: version, file: file, sql: string(data), checksum: hex.EncodeToString(sum[:])}, nil
}

// lineOf turns a 1-based character position reported by the server into a
// line number of the file, so that an error points at the statement.
func lineOf(sql string, position int32) int {
	runes := []rune(sql)
	if position <= 0 || int(position) > len(runes) {
		return 0
	}
	return strings.Count(string(runes[:position-1]), "\n") + 1
}
