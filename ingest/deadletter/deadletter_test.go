package deadletter

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestPutListReadRemove(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "deadletter"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	second, err := d.Put(Entry{Seq: 12, At: at, Error: "code: 252", Attempts: 5, Spans: 3, Projects: []string{"b", "a"}}, []byte("record twelve"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := d.Put(Entry{Seq: 7, At: at.Add(time.Second), Error: "code: 53"}, []byte("seven"))
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != "00000000000000000012-1796378400000000000" || second.Bytes != 13 || !slices.Equal(second.Projects, []string{"a", "b"}) {
		t.Errorf("entry %+v", second)
	}
	list, err := d.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != first.ID || list[1].ID != second.ID {
		t.Fatalf("List %+v, want record 7's entry, then 12's", list)
	}
	if n, err := d.Count(); err != nil || n != 2 {
		t.Errorf("Count = %d, %v; want 2", n, err)
	}
	e, rec, err := d.Read(second.ID)
	if err != nil || string(rec) != "record twelve" || e.Error != "code: 252" || e.Attempts != 5 {
		t.Fatalf("Read = %+v, %q, %v", e, rec, err)
	}
	if err := d.Remove(second.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Read(second.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Read after Remove: %v, want ErrNotFound", err)
	}
	if err := d.Remove(second.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove twice: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"../../etc/passwd", "", "12", "00000000000000000012-1/x"} {
		if _, _, err := d.Read(bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("Read(%q): %v, want ErrNotFound", bad, err)
		}
	}
}

// TestDamagedRecordIsRefused: a record whose bytes no longer match the
// checksum in its header is not handed out for replay.
func TestDamagedRecordIsRefused(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e, err := d.Put(Entry{Seq: 1}, []byte("abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(d.Path(), e.ID+suffix)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Read(e.ID); err == nil {
		t.Fatal("a damaged record was read back")
	}
	// Its header still lists, so an operator sees it.
	if list, err := d.List(); err != nil || len(list) != 1 {
		t.Errorf("List = %v, %v", list, err)
	}
}
