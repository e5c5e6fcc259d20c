package columnar

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/tallyhq/tally/replay"
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// testTrace is the trace id of testdata/expected_fixture.json.
const testTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// callRow is one exported row as read back; nil pointers are nulls.
type callRow struct {
	TraceID, ConversationID, Agent, Task string
	Seq                                  int32
	SpanID, Tool, ToolCallID, ArgsHash   string
	Arguments, Result                    *string
	ErrorType, ErrorMessage              *string
	Status                               string
	Attempt                              int32
	DurationMs                           float64
	StartedAtUs                          int64
}

func strp(s string) *string { return &s }

// wantRows are the rows of testdata/expected_fixture.json followed by the
// one call of otherFixture, worked out from the fixture by hand. Start times:
// 2025-03-01T10:00:00Z is unix 1740823200 s = 1740823200000000 µs.
func wantRows() []callRow {
	const trace, conv, agent, task = testTrace, "conv-42", "trip-planner", "plan_trip"
	return []callRow{
		{trace, conv, agent, task, 1, "c000000000000001", "search", "call_1",
			"41694c00fa84c49e916c32d98e6ded15f55e3280582010ec74b64816492b9d19",
			strp(`{"limit":10,"q":"hotels in Lisbon"}`), strp(`{"hits":[{"id":"h1","name":"Casa Azul"},{"id":"h2","name":"Hotel Sol"}]}`),
			nil, nil, "ok", 1, 250, 1740823201000000},
		{trace, conv, agent, task, 2, "c000000000000002", "get_weather", "call_2",
			"0ee04e560ed3acf087b2285f8dc173d1828f479e2fceb2fa1fd10abf65e3ff1e",
			strp(`{"city":"Lisbon"}`), nil,
			strp("timeout"), strp("upstream timed out after 5s"), "error", 1, 5000, 1740823202000000},
		{trace, conv, agent, task, 3, "c000000000000003", "get_weather", "call_2",
			"0ee04e560ed3acf087b2285f8dc173d1828f479e2fceb2fa1fd10abf65e3ff1e",
			strp(`{"city":"Lisbon"}`), strp(`{"sky":"clear","temp_c":18.5}`),
			nil, nil, "ok", 2, 320.5, 1740823207500000},
		{trace, conv, agent, task, 4, "c000000000000004", "book", "call_3",
			"835939d924c9f7e607d3792fc37c030bd7700cb4743458ce98f2148bd821b13b",
			strp(`{"hotel_id":"h1","nights":3}`), strp(`confirmed <ref ABC123> & emailed`),
			nil, nil, "ok", 1, 1200, 1740823208000000},
		{trace, conv, agent, task, 5, "c000000000000005", "notify", "", "",
			nil, nil, nil, nil, "unset", 0, 50, 1740823208000000},
		// otherFixture: 1.000001 s after 1970-01-01 is 1000001 µs (the
		// trailing nanoseconds are cut).
		{"ffff", "", "other", "t", 1, "d1", "ping", "", "h", strp(`{}`), strp(`null`), nil, nil, "ok", 1, 0.25, 1000001},
	}
}

func otherFixture() *replay.Fixture {
	return &replay.Fixture{Format: replay.FormatV1, Run: replay.RunInfo{TraceID: "ffff", Agent: "other", Task: "t"}, Calls: []replay.Call{
		{Seq: 1, SpanID: "d1", Tool: "ping", ArgsHash: "h", Arguments: json.RawMessage(`{ }`), Result: json.RawMessage(`null`),
			Status: "ok", Attempt: 1, DurationMs: 0.25, StartedAt: "1970-01-01T00:00:01.000001999Z"},
	}}
}

func exportFixtures(t *testing.T) []*replay.Fixture {
	t.Helper()
	f, err := replay.Load("../testdata/expected_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	return []*replay.Fixture{f, otherFixture()}
}

func rowsOf(t *testing.T, rec arrow.Record) []callRow {
	t.Helper()
	str := func(col, i int) string { return rec.Column(col).(*array.String).Value(i) }
	opt := func(col, i int) *string {
		if rec.Column(col).IsNull(i) {
			return nil
		}
		return strp(str(col, i))
	}
	var rows []callRow
	for i := 0; i < int(rec.NumRows()); i++ {
		rows = append(rows, callRow{
			TraceID: str(0, i), ConversationID: str(1, i), Agent: str(2, i), Task: str(3, i),
			Seq:    rec.Column(4).(*array.Int32).Value(i),
			SpanID: str(5, i), Tool: str(6, i), ToolCallID: str(7, i), ArgsHash: str(8, i),
			Arguments: opt(9, i), Result: opt(10, i), ErrorType: opt(11, i), ErrorMessage: opt(12, i),
			Status:      str(13, i),
			Attempt:     rec.Column(14).(*array.Int32).Value(i),
			DurationMs:  rec.Column(15).(*array.Float64).Value(i),
			StartedAtUs: int64(rec.Column(16).(*array.Timestamp).Value(i)),
		})
	}
	return rows
}

func checkRows(t *testing.T, got []callRow) {
	t.Helper()
	want := wantRows()
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			t.Errorf("row %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

func TestWriteArrowRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteArrow(&buf, exportFixtures(t)); err != nil {
		t.Fatalf("WriteArrow: %v", err)
	}
	r, err := ipc.NewFileReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("open arrow file: %v", err)
	}
	defer r.Close()
	if !r.Schema().Equal(CallsSchema()) {
		t.Errorf("schema = %s", r.Schema())
	}
	var rows []callRow
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, rowsOf(t, rec)...)
	}
	checkRows(t, rows)
}

func TestWriteParquetRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteParquet(&buf, exportFixtures(t)); err != nil {
		t.Fatalf("WriteParquet: %v", err)
	}
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(buf.Bytes()),
		parquet.NewReaderProperties(memory.DefaultAllocator), pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("read parquet: %v", err)
	}
	defer tbl.Release()
	// Parquet adds field-id metadata; names, types and nullability must match.
	got := tbl.Schema().Fields()
	want := CallsSchema().Fields()
	if len(got) != len(want) {
		t.Fatalf("schema = %s", tbl.Schema())
	}
	for i := range want {
		if got[i].Name != want[i].Name || !arrow.TypeEqual(got[i].Type, want[i].Type) || got[i].Nullable != want[i].Nullable {
			t.Errorf("field %d = %s, want %s", i, got[i], want[i])
		}
	}
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	var rows []callRow
	for tr.Next() {
		rows = append(rows, rowsOf(t, tr.Record())...)
	}
	checkRows(t, rows)
}

func TestWriteEmpty(t *testing.T) {
	var a, p bytes.Buffer
	if err := WriteArrow(&a, nil); err != nil {
		t.Errorf("WriteArrow(nil): %v", err)
	}
	if err := WriteParquet(&p, nil); err != nil {
		t.Errorf("WriteParquet(nil): %v", err)
	}
	r, err := ipc.NewFileReader(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.Record(0)
	if err != nil || rec.NumRows() != 0 {
		t.Errorf("empty arrow file: %v rows, err %v", rec, err)
	}
}
