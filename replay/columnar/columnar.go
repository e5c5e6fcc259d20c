package columnar

import (
	"errors"
	"fmt"
	"github.com/tallyhq/tally/replay"
	"io"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tallyhq/tally/support/canonical"
)

// CallsSchema returns the Arrow schema of WriteArrow and WriteParquet: one
// row per recorded tool call. Nullable columns are null when the fixture lacks
// the value (arguments or result not captured, no error).
func CallsSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "trace_id", Type: arrow.BinaryTypes.String},
		{Name: "conversation_id", Type: arrow.BinaryTypes.String},
		{Name: "agent", Type: arrow.BinaryTypes.String},
		{Name: "task", Type: arrow.BinaryTypes.String},
		{Name: "seq", Type: arrow.PrimitiveTypes.Int32},
		{Name: "span_id", Type: arrow.BinaryTypes.String},
		{Name: "tool", Type: arrow.BinaryTypes.String},
		{Name: "tool_call_id", Type: arrow.BinaryTypes.String},
		{Name: "args_hash", Type: arrow.BinaryTypes.String},
		{Name: "arguments", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "result", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "error_type", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "error_message", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "status", Type: arrow.BinaryTypes.String},
		{Name: "attempt", Type: arrow.PrimitiveTypes.Int32},
		{Name: "duration_ms", Type: arrow.PrimitiveTypes.Float64},
		{Name: "started_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}, nil)
}

// WriteArrow writes the fixtures' calls to w as one Arrow IPC file (one
// record batch), rows in fixture order then call order. The file starts at
// w's current position.
func WriteArrow(w io.Writer, fixtures []*replay.Fixture) error {
	rec, err := callsRecord(fixtures)
	if err != nil {
		return err
	}
	defer rec.Release()
	fw, err := ipc.NewFileWriter(&positionWriter{w: w}, ipc.WithSchema(rec.Schema()))
	if err != nil {
		return fmt.Errorf("replay: open arrow writer: %w", err)
	}
	if err := fw.Write(rec); err != nil {
		return fmt.Errorf("replay: write arrow record: %w", err)
	}
	if err := fw.Close(); err != nil {
		return fmt.Errorf("replay: close arrow writer: %w", err)
	}
	return nil
}

// WriteParquet writes the fixtures' calls to w as one Parquet file, with the
// Arrow schema stored so readers get the UTC timestamp type back.
func WriteParquet(w io.Writer, fixtures []*replay.Fixture) error {
	rec, err := callsRecord(fixtures)
	if err != nil {
		return err
	}
	defer rec.Release()
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.Record{rec})
	defer tbl.Release()
	props := parquet.NewWriterProperties(parquet.WithAllocator(memory.DefaultAllocator))
	arrowProps := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())
	chunk := tbl.NumRows()
	if chunk < 1 {
		chunk = 1
	}
	if err := pqarrow.WriteTable(tbl, w, chunk, props, arrowProps); err != nil {
		return fmt.Errorf("replay: write parquet: %w", err)
	}
	return nil
}

// callsRecord builds the one-row-per-call record of the fixtures.
func callsRecord(fixtures []*replay.Fixture) (arrow.Record, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, CallsSchema())
	defer b.Release()
	str := func(i int) *array.StringBuilder { return b.Field(i).(*array.StringBuilder) }
	optional := func(i int, v string, present bool) {
		if present {
			str(i).Append(v)
		} else {
			str(i).AppendNull()
		}
	}
	for _, f := range fixtures {
		for _, c := range f.Calls {
			started, err := time.Parse(time.RFC3339Nano, c.StartedAt)
			if err != nil {
				return nil, fmt.Errorf("replay: call #%d of trace %s: started_at: %w", c.Seq, f.Run.TraceID, err)
			}
			args, hasArgs := partText(c.Arguments, c.ArgumentsText)
			result, hasResult := partText(c.Result, c.ResultText)
			str(0).Append(f.Run.TraceID)
			str(1).Append(f.Run.ConversationID)
			str(2).Append(f.Run.Agent)
			str(3).Append(f.Run.Task)
			b.Field(4).(*array.Int32Builder).Append(int32(c.Seq))
			str(5).Append(c.SpanID)
			str(6).Append(c.Tool)
			str(7).Append(c.ToolCallID)
			str(8).Append(c.ArgsHash)
			optional(9, args, hasArgs)
			optional(10, result, hasResult)
			if c.Error != nil {
				str(11).Append(c.Error.Type)
				str(12).Append(c.Error.Message)
			} else {
				str(11).AppendNull()
				str(12).AppendNull()
			}
			str(13).Append(c.Status)
			b.Field(14).(*array.Int32Builder).Append(int32(c.Attempt))
			b.Field(15).(*array.Float64Builder).Append(c.DurationMs)
			b.Field(16).(*array.TimestampBuilder).Append(arrow.Timestamp(started.UnixMicro()))
		}
	}
	return b.NewRecord(), nil
}

// partText is a part's column value: compact canonical JSON or the text.
func partText(j []byte, text string) (string, bool) {
	if len(j) > 0 {
		if canon, err := canonical.JSON(j); err == nil {
			return string(canon), true
		}
		return string(j), true
	}
	if text != "" {
		return text, true
	}
	return "", false
}

// positionWriter gives ipc.FileWriter the position it asks for with
// Seek(0, io.SeekCurrent), counting bytes written, so any io.Writer works.
type positionWriter struct {
	w   io.Writer
	pos int64
}

func (p *positionWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.pos += int64(n)
	return n, err
}

func (p *positionWriter) Seek(offset int64, whence int) (int64, error) {
	if offset == 0 && whence == io.SeekCurrent {
		return p.pos, nil
	}
	return 0, errors.New("replay: arrow output cannot seek")
}
