package query

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Pairs marshal to the bytes encoding/json writes for the same map, for
// every kind of character that needs escaping.
func TestPairsMarshalLikeAMap(t *testing.T) {
	tests := []struct {
		name         string
		keys, values []string
	}{
		{"empty", nil, nil},
		{"plain", []string{"a", "b"}, []string{"1", "two"}},
		{"quotes and backslashes", []string{`k"q`, `k\b`}, []string{`say "hi"`, `C:\dir\`}},
		{"control characters", []string{"ctl"}, []string{"line\nbreak\ttab\rcr\x00nul\x1fus\x7fdel"}},
		{"html", []string{"<script>"}, []string{"a && b > c"}},
		{"unicode", []string{"emoji", "é"}, []string{"🦊 and \u2028 and \u2029", "naïve"}}, // keys sorted, as stored
		{"invalid utf-8", []string{"bad"}, []string{"a\xffb\xc3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]string{}
			for i, k := range tt.keys {
				m[k] = tt.values[i]
			}
			want, err := json.Marshal(struct {
				A map[string]string `json:"a,omitempty"`
			}{m})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(struct {
				A Pairs `json:"a,omitempty"`
			}{pairs(tt.keys, tt.values)})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("Pairs marshal to\n%s\nwant (as a map)\n%s", got, want)
			}
		})
	}
}

func TestPairsRepeatedKeyAndRoundTrip(t *testing.T) {
	p := pairs([]string{"a", "b", "b", "c"}, []string{"1", "2", "3", "4"})
	want := Pairs{{"a", "1"}, {"b", "3"}, {"c", "4"}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("pairs = %v, want %v (a repeated key keeps its last value)", p, want)
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Pairs
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("round trip of %s = %v, want %v", data, back, want)
	}
	if err := json.Unmarshal([]byte(`{"a":1}`), &back); err == nil {
		t.Fatal("a non-string value unmarshalled without error")
	}
}
