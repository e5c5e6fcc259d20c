package testenv

import (
	"context"
	"testing"
)

// TestClickHouseRoundTrip creates a table in a fresh database, inserts two rows
// through a batch with an explicit column list, and reads them back.
func TestClickHouseRoundTrip(t *testing.T) {
	server := ClickHouse(t)
	ctx := context.Background()
	var database string
	t.Run("insert and select", func(t *testing.T) {
		database = server.NewDatabase(t)
		conn := server.Conn(t, database)
		if err := conn.Exec(ctx, `CREATE TABLE spans (id UInt64, name String) ENGINE = MergeTree ORDER BY id`); err != nil {
			t.Fatalf("create table: %v", err)
		}
		batch, err := conn.PrepareBatch(ctx, `INSERT INTO spans (id, name)`)
		if err != nil {
			t.Fatalf("prepare batch: %v", err)
		}
		for _, row := range []struct {
			id   uint64
			name string
		}{{1, "chat"}, {2, "execute_tool"}} {
			if err := batch.Append(row.id, row.name); err != nil {
				t.Fatalf("append: %v", err)
			}
		}
		if err := batch.Send(); err != nil {
			t.Fatalf("send batch: %v", err)
		}

		rows, err := conn.Query(ctx, `SELECT id, name FROM spans ORDER BY id`)
		if err != nil {
			t.Fatalf("select: %v", err)
		}
		defer rows.Close()
		type span struct {
			id   uint64
			name string
		}
		var got []span
		for rows.Next() {
			var s span
			if err := rows.Scan(&s.id, &s.name); err != nil {
				t.Fatalf("scan: %v", err)
			}
			got = append(got, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("rows: %v", err)
		}
		want := []span{{1, "chat"}, {2, "execute_tool"}}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("rows = %+v, want %+v", got, want)
		}
	})

	// The subtest's cleanup has dropped its database.
	conn := server.Conn(t, "default")
	var count uint64
	if err := conn.QueryRow(ctx, `SELECT count() FROM system.databases WHERE name = ?`, database).Scan(&count); err != nil {
		t.Fatalf("count databases: %v", err)
	}
	if count != 0 {
		t.Errorf("database %s still exists after its test ended", database)
	}
}

func TestNewDatabaseNamesAreUnique(t *testing.T) {
	server := ClickHouse(t)
	first, second := server.NewDatabase(t), server.NewDatabase(t)
	if first == second {
		t.Errorf("NewDatabase returned %q twice", first)
	}
}

// TestClickHouseRestartKeepsData stops a test's own server, checks it is gone,
// starts it on the same address and finds the rows written before.
func TestClickHouseRestartKeepsData(t *testing.T) {
	server := StartClickHouse(t)
	ctx := context.Background()
	database := server.NewDatabase(t)
	conn := server.Conn(t, database)
	if err := conn.Exec(ctx, `CREATE TABLE kept (n UInt32) ENGINE = MergeTree ORDER BY n`); err != nil {
		t.Fatalf("create table: %v", err)
	}
	batch, err := conn.PrepareBatch(ctx, `INSERT INTO kept (n)`)
	if err != nil {
		t.Fatalf("prepare batch: %v", err)
	}
	for _, n := range []uint32{3, 4, 5} {
		if err := batch.Append(n); err != nil {
			t.Fatalf("append: %v", err)
		}
	}
	if err := batch.Send(); err != nil {
		t.Fatalf("send batch: %v", err)
	}
	addr := server.Addr

	server.Stop(t)
	if err := server.ping(); err == nil {
		t.Fatalf("ping after Stop succeeded, want an error")
	}

	server.Start(t)
	if server.Addr != addr {
		t.Errorf("Addr after restart = %s, want %s", server.Addr, addr)
	}
	after := server.Conn(t, database)
	var sum uint64
	// 3 + 4 + 5 = 12
	if err := after.QueryRow(ctx, `SELECT sum(n) FROM kept`).Scan(&sum); err != nil {
		t.Fatalf("sum after restart: %v", err)
	}
	if sum != 12 {
		t.Errorf("sum(n) after restart = %d, want 12", sum)
	}

	server.Kill(t)
	server.Restart(t)
	if err := server.Conn(t, database).QueryRow(ctx, `SELECT sum(n) FROM kept`).Scan(&sum); err != nil {
		t.Fatalf("sum after kill and restart: %v", err)
	}
	if sum != 12 {
		t.Errorf("sum(n) after kill and restart = %d, want 12", sum)
	}
}
