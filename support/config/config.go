// Package config layers tally's settings: the config file (tally.yaml) is
// overridden by TALLY_* environment variables, which are overridden by
// command-line flags. Flags are the schema: every setting is a flag, its
// environment variable is TALLY_ + the flag name upper-cased with dashes as
// underscores, and its file key is the flag name with the first dash as a
// nesting level optional ("clickhouse-addr" may be written as
// clickhouse: {addr: …} or clickhouse-addr: …).
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// EnvName is the environment variable for a flag.
func EnvName(flag string) string {
	return "TALLY_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Apply fills every flag of fs that was not set on the command line from the
// environment, then from the file at path (if it exists; a missing default
// file is fine, a missing explicit one is an error when required is true).
func Apply(flags *pflag.FlagSet, path string, required bool) error {
	file, err := loadFile(path, required)
	if err != nil {
		return err
	}
	var errs []error
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if err := flags.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err))
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			if err := flags.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s=%q: %w", path, f.Name, v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// loadFile reads a YAML file into flag-name → value form: nested keys are
// joined with dashes, underscores become dashes, lists become comma-separated.
func loadFile(path string, required bool) (map[string]string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parse config %s: %w", path, err)
	}
	flatten("", doc, out)
	return out, nil
}

func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			key := strings.ReplaceAll(k, "_", "-")
			if prefix != "" {
				key = prefix + "-" + key
			}
			flatten(key, val, out)
		}
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmt.Sprint(e)
		}
		out[prefix] = strings.Join(parts, ",")
	case nil:
	default:
		out[prefix] = fmt.Sprint(x)
	}
}
