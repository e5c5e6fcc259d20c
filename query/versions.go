package query

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/canonical"
)

// A run's configuration is what its behaviour depends on besides its input:
// the models asked for and answering, the agents' versions, the service's
// version, the prompts by name and version, the tool definitions offered to
// the models and the system instructions. Two runs share a fingerprint when
// all of these agree, so a change of any of them starts a new version of a
// task — the unit of comparison (GET /versions, /compare).

// Attributes a run's configuration is read from (beside the model
// columns): the GenAI semantic conventions' agent version and prompt name,
// Langfuse's prompt management (the observation keys and their older
// forms), Traceloop's managed prompts and OpenInference's prompt templates.
var configAttrs = []string{
	"gen_ai.agent.version", "gen_ai.prompt.name",
	"langfuse.observation.prompt.name", "langfuse.observation.prompt.version",
	"langfuse.prompt.name", "langfuse.prompt.version",
	"traceloop.prompt.key", "traceloop.prompt.version",
	"llm.prompt_template.version", "llm.prompt_template.template", "prompt.id",
	CaseAttribute,
}

// CaseAttribute names the dataset case a run is a trial of (Langfuse's
// experiment runner sets it on every span of an experiment item: the
// dataset item's id): GET /tasks?by=case groups runs by it. It is not part
// of the configuration.
const CaseAttribute = "langfuse.experiment.item.id"

// RunConfig is a run's configuration and its fingerprint. Lists are sorted
// and distinct; the hashes are the first 12 hex digits of the SHA-256 of
// the canonical JSON (tools) or the text (instructions, templates).
type RunConfig struct {
	Fingerprint    string   `json:"fingerprint"`
	Models         []string `json:"models"`         // "request→response" per distinct pair
	AgentVersions  []string `json:"agent_versions"` // "agent@version"
	ServiceVersion string   `json:"service_version,omitempty"`
	Prompts        []string `json:"prompts"`      // "name@version" (or a template's hash)
	Tools          []string `json:"tools"`        // hashes of the tool definitions offered
	Instructions   []string `json:"instructions"` // hashes of the system instructions
	// Case is the dataset case the run tried (CaseAttribute), "" for none;
	// not part of the fingerprint.
	Case string `json:"case,omitempty"`
}

// short is the first 12 hex digits of s's SHA-256.
func short(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// configBuilder collects one run's configuration.
type configBuilder struct {
	models, agents, prompts, tools, instructions map[string]bool
	service, caseID                              string
}

func newConfigBuilder() *configBuilder {
	return &configBuilder{models: map[string]bool{}, agents: map[string]bool{}, prompts: map[string]bool{},
		tools: map[string]bool{}, instructions: map[string]bool{}}
}

// config is the collected configuration with its fingerprint: the hash of
// its canonical JSON without the fingerprint.
func (b *configBuilder) config() RunConfig {
	c := RunConfig{Models: sortedKeys(b.models), AgentVersions: sortedKeys(b.agents), ServiceVersion: b.service,
		Prompts: sortedKeys(b.prompts), Tools: sortedKeys(b.tools), Instructions: sortedKeys(b.instructions)}
	raw, _ := json.Marshal(c)
	c.Fingerprint, c.Case = short(string(raw)), b.caseID
	return c
}

// spanConfig adds one span's part of the configuration.
func (b *configBuilder) spanConfig(spanType, agent, reqModel, respModel, service string, attrs map[string]string) {
	if spanType == schema.TypeInference && (reqModel != "" || respModel != "") {
		b.models[cmp.Or(reqModel, respModel)+"→"+cmp.Or(respModel, reqModel)] = true
	}
	if v := attrs["gen_ai.agent.version"]; v != "" {
		b.agents[cmp.Or(agent, "agent")+"@"+v] = true
	}
	if service != "" {
		b.service = service
	}
	if id := attrs[CaseAttribute]; id != "" {
		b.caseID = id
	}
	prompt := func(name, version string) {
		if name != "" || version != "" {
			b.prompts[cmp.Or(name, "prompt")+"@"+cmp.Or(version, "?")] = true
		}
	}
	prompt(cmp.Or(attrs["langfuse.observation.prompt.name"], attrs["langfuse.prompt.name"]),
		cmp.Or(attrs["langfuse.observation.prompt.version"], attrs["langfuse.prompt.version"]))
	prompt(attrs["traceloop.prompt.key"], attrs["traceloop.prompt.version"])
	if t := attrs["llm.prompt_template.template"]; t != "" || attrs["llm.prompt_template.version"] != "" {
		v := attrs["llm.prompt_template.version"]
		if v == "" {
			v = "template:" + short(t)
		}
		prompt(attrs["prompt.id"], v)
	}
	if n := attrs["gen_ai.prompt.name"]; n != "" {
		prompt(n, "")
	}
	// OpenInference offers tools as llm.tools.N.tool.json_schema.
	var oiTools []string
	for k, v := range attrs {
		if strings.HasPrefix(k, "llm.tools.") && strings.HasSuffix(k, ".tool.json_schema") {
			oiTools = append(oiTools, canonical.Hash(v))
		}
	}
	if len(oiTools) > 0 {
		slices.Sort(oiTools)
		b.tools[short(strings.Join(oiTools, ","))] = true
	}
}

// RunConfigs reads the configurations of runs, by trace id. lo and hi bound
// when the runs' spans start (runsExtent), for partition pruning.
func (r OutcomeReader) RunConfigs(ctx context.Context, project string, traceIDs []string, lo, hi time.Time) (map[string]RunConfig, error) {
	return r.runConfigs(ctx, project, traceIDs, lo, hi)
}

// runConfigs is RunConfigs, for the reports built on versions (compare).
func (r *core) runConfigs(ctx context.Context, project string, traceIDs []string, lo, hi time.Time) (map[string]RunConfig, error) {
	builders := map[string]*configBuilder{}
	get := func(id string) *configBuilder {
		if builders[id] == nil {
			builders[id] = newConfigBuilder()
		}
		return builders[id]
	}
	for len(traceIDs) > 0 {
		chunk := traceIDs[:min(outcomeChunk, len(traceIDs))]
		traceIDs = traceIDs[len(chunk):]
		set := traceSet(chunk)
		for _, id := range chunk {
			get(strings.ToLower(id))
		}
		q, args := runConfigSpansSQL(r.store, project, set, lo, hi)
		rows, err := r.store.Conn().Query(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("read run configurations: %w", err)
		}
		// The attributes are read as encoded strings into slices and a map
		// reused from row to row (spanConfig keeps none of them).
		var traceID, spanType, agent, req, resp, service, encKeys, encValues string
		var keys, values []string
		attrs := map[string]string{}
		for rows.Next() {
			if err := rows.Scan(&traceID, &spanType, &agent, &req, &resp, &service, &encKeys, &encValues); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read run configurations: %w", err)
			}
			if keys, err = schema.AppendDecodedStrings(keys[:0], encKeys); err == nil {
				values, err = schema.AppendDecodedStrings(values[:0], encValues)
			}
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("read run configurations: attributes: %w", err)
			}
			clear(attrs)
			for i := range min(len(keys), len(values)) {
				attrs[keys[i]] = values[i]
			}
			get(traceID).spanConfig(spanType, agent, req, resp, service, attrs)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("read run configurations: %w", err)
		}
		cq, cargs := runConfigContentSQL(r.store, project, set, lo, hi)
		crows, err := r.store.Conn().Query(ctx, cq, cargs...)
		if err != nil {
			return nil, fmt.Errorf("read run configurations: %w", err)
		}
		for crows.Next() {
			var traceID, kind, value string
			if err := crows.Scan(&traceID, &kind, &value); err != nil {
				crows.Close()
				return nil, fmt.Errorf("read run configurations: %w", err)
			}
			b := get(traceID)
			if kind == schema.ContentToolDefinitions {
				b.tools[canonical.Hash(value)[:12]] = true
			} else {
				b.instructions[short(value)] = true
			}
		}
		err = crows.Err()
		crows.Close()
		if err != nil {
			return nil, fmt.Errorf("read run configurations: %w", err)
		}
	}
	out := make(map[string]RunConfig, len(builders))
	for id, b := range builders {
		out[id] = b.config()
	}
	return out, nil
}

// runConfigSpansSQL builds runConfigs' read of the spans of the runs in
// set, whose spans start in [lo, hi]: the columns and, of the attributes,
// only configAttrs and OpenInference's offered tools, once per span.
func runConfigSpansSQL(t tables, project string, set clickhouse.GroupSet, lo, hi time.Time) (string, []any) {
	wanted := make([]any, len(configAttrs))
	for i, k := range configAttrs {
		wanted[i] = k
	}
	keep := "(has([" + strings.TrimSuffix(strings.Repeat("?, ", len(wanted)), ", ") + "], k) OR k LIKE 'llm.tools.%')"
	q := "SELECT trace_id, span_type, agent_name, request_model, response_model, " +
		"resource_values[indexOf(resource_keys, 'service.version')], " +
		schema.EncodedStrings("arrayFilter(k -> "+keep+", attr_keys)") + ", " +
		schema.EncodedStrings("arrayFilter((v, k) -> "+keep+", attr_values, attr_keys)") + " FROM " +
		t.Table(schema.TableSpans) + " PREWHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ?" +
		" ORDER BY trace_id, start_ns, span_id LIMIT 1 BY trace_id, span_id"
	return q, append(append(append([]any{}, wanted...), wanted...), project, set, lo.UTC().Truncate(time.Second), hi.UTC())
}

// runConfigContentSQL builds runConfigs' read of the tool definitions and
// system instructions the runs in set recorded.
func runConfigContentSQL(t tables, project string, set clickhouse.GroupSet, lo, hi time.Time) (string, []any) {
	q := "SELECT trace_id, kind, value FROM " + final(t.Table(schema.TableContent)) +
		" PREWHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ? WHERE kind IN (?, ?)"
	return q, []any{project, set, lo.UTC().Truncate(time.Second), hi.UTC(), schema.ContentToolDefinitions, schema.ContentSystemInstructions}
}
