package postgres_test

import (
	"testing"

	"blockspace.exchange/platform/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
