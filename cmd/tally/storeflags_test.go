package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestStoreFlagsPickTheStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  map[string]string // as flags, TALLY_* or tally.yaml set them (pflag's Set)
		want string            // store kind, or "error: <text>"
	}{
		{"nothing: embedded", nil, storeEmbedded},
		{"a server address: clickhouse", map[string]string{"clickhouse-addr": "ch:9000"}, storeClickHouse},
		{"an address set to nothing: embedded", map[string]string{"clickhouse-addr": ""}, storeEmbedded},
		{"a cluster: clickhouse", map[string]string{"clickhouse-cluster": "tally"}, storeClickHouse},
		{"a cluster set to nothing: embedded", map[string]string{"clickhouse-cluster": ""}, storeEmbedded},
		{"explicit embedded beats an address", map[string]string{"store": "embedded", "clickhouse-addr": "ch:9000"}, storeEmbedded},
		{"explicit clickhouse", map[string]string{"store": "clickhouse"}, storeClickHouse},
		{"embedded cluster", map[string]string{"store": "embedded", "clickhouse-cluster": "tally"}, "error: --clickhouse-cluster needs --store clickhouse"},
		{"unknown store", map[string]string{"store": "sqlite"}, `error: --store "sqlite": want embedded or clickhouse`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			var f storeFlags
			f.register(fs, nil)
			for k, v := range tc.set {
				if err := fs.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			got, err := f.store()
			if err != nil {
				got = "error: " + err.Error()
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("store() = %q, want %q", got, tc.want)
			}
		})
	}
}
