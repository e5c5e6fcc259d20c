package transcript_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tallyhq/tally/transcript"
)

// fixture is one testdata file: what a span carried, in one dialect, and
// the chat worked out by hand from that dialect's documented shape.
type fixture struct {
	About      string            `json:"about"`
	Content    map[string]string `json:"content"`
	Attributes map[string]string `json:"attributes"`
	Events     []struct {
		Name       string         `json:"name"`
		Attributes map[string]any `json:"attributes"`
	} `json:"events"`
	Want transcript.Chat `json:"want"`
}

func TestRead(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var f fixture
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&f); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if f.About == "" {
				t.Fatalf("%s: say in about which instrumentation sends this and where", file)
			}
			src := transcript.Source{Content: f.Content, Attributes: f.Attributes}
			for _, e := range f.Events {
				src.Events = append(src.Events, transcript.Event{Name: e.Name, Attributes: e.Attributes})
			}
			got := transcript.Read(src)
			if !reflect.DeepEqual(normalize(got), normalize(f.Want)) {
				g, _ := json.MarshalIndent(got, "", "  ")
				w, _ := json.MarshalIndent(f.Want, "", "  ")
				t.Errorf("chat\n got %s\nwant %s", g, w)
			}
		})
	}
}

// normalize makes nil and empty part lists equal, as JSON shows them.
func normalize(c transcript.Chat) transcript.Chat {
	fix := func(ms []transcript.Message) []transcript.Message {
		for i := range ms {
			if ms[i].Parts == nil {
				ms[i].Parts = []transcript.Part{}
			}
		}
		return ms
	}
	c.Input, c.Output = fix(c.Input), fix(c.Output)
	return c
}

// TestReadNothing: a span without content has an empty chat.
func TestReadNothing(t *testing.T) {
	if c := transcript.Read(transcript.Source{Attributes: map[string]string{"gen_ai.request.model": "gpt-4o"}}); !c.Empty() {
		t.Errorf("chat of a span without content: %+v", c)
	}
}
