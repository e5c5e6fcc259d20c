package params

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"24h", 24 * time.Hour, true},
		{"30m", 30 * time.Minute, true},
		{"7d", 7 * 24 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"0d", 0, true},
		{"106751d", 106751 * 24 * time.Hour, true}, // the longest time.Duration in whole days
		{"106752d", 0, false},                      // overflows time.Duration
		{"100000000000d", 0, false},
		{"1e308d", 0, false},
		{"1e3d", 0, false}, // exponents are not durations
		{"0x10d", 0, false},
		{"NaNd", 0, false},
		{"nand", 0, false},
		{"Infd", 0, false},
		{"+Infd", 0, false},
		{"infinityd", 0, false},
		{"-1d", 0, false},
		{"+1d", 0, false},
		{"d", 0, false},
		{".d", 0, false},
		{"1..5d", 0, false},
		{"-1h", 0, false},
		{"9999999999h", 0, false}, // time.ParseDuration overflow
		{"", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if tt.ok && (err != nil || got != tt.want) {
				t.Fatalf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if !tt.ok && err == nil {
				t.Fatalf("ParseDuration(%q) = %v, want an error", tt.in, got)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{30 * 24 * time.Hour, "30d"},
		{24 * time.Hour, "1d"},
		{36 * time.Hour, "36h0m0s"}, // not whole days
		{90 * time.Minute, "1h30m0s"},
		{0, "0s"},
	} {
		if got := FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
		if tc.d > 0 {
			if back, err := ParseDuration(FormatDuration(tc.d)); err != nil || back != tc.d {
				t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", tc.d, back, err)
			}
		}
	}
}

func TestTimeRangeEdges(t *testing.T) {
	now := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, since, until string
		ok                 bool
	}{
		{"open", "", "", true},
		{"relative", "7d", "", true},
		{"epoch", "1970-01-01T00:00:00Z", "", true},
		{"before the epoch", "1969-12-31T23:59:59Z", "", false},
		{"duration before the epoch", "100000d", "", false},
		{"last second of 2099", "", "2099-12-31T23:59:59Z", true},
		{"2100", "", "2100-01-01T00:00:00Z", true},
		{"after 2100", "", "2100-01-01T00:00:01Z", false},
		{"year 9999", "", "9999-12-31T23:59:59Z", false},
		{"year 9999 with a zone", "", "9999-12-31T23:59:59+14:00", false},
		{"until before since", "1d", "2d", false},
		{"NaN days", "NaNd", "", false},
		{"Inf days", "Infd", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := TimeRange(tt.since, tt.until, now)
			if (err == nil) != tt.ok {
				t.Fatalf("TimeRange(%q, %q) error %v, want ok %v", tt.since, tt.until, err, tt.ok)
			}
		})
	}
}
