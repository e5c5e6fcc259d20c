package ingest

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tallyhq/tally/ingest/wire"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/canonical"
)

// Options configure Normalize.
type Options struct {
	// Project is stamped on every row.
	Project string
	// Limits bound values, attributes and events per span; a zero field
	// means no limit. MaxSpansPerRequest and MaxBodyBytes are the
	// receiver's business and are ignored here.
	Limits Limits
	// Pricer prices spans that carry usage and no client-sent cost. When nil,
	// such spans get CostSource schema.CostUnpriced.
	Pricer Pricer
	// Usage decides, per instrumentation scope and provider, whether input
	// tokens exclude cache tokens when the numbers alone do not say.
	Usage UsagePolicy
	// Privacy drops, redacts or hashes values by attribute key, and can drop
	// all content.
	Privacy Privacy
	// Now gives IngestedAt; nil means time.Now.
	Now func() time.Time
}

// Attribute keys tally adds to a span's attributes.
const (
	// AttrDroppedAttributes counts attributes dropped past Limits.MaxAttrsPerSpan.
	AttrDroppedAttributes = "tally.dropped_attributes"
	// AttrDroppedEvents counts events dropped past Limits.MaxEventsPerSpan.
	AttrDroppedEvents = "tally.dropped_events"
)

// maxRejectMessages bounds how many invalid spans Rejected.Message names.
const maxRejectMessages = 3

// Normalize turns one OTLP request into span and content rows (docs/instrumentations.md is
// the reference for every alias it understands).
//
// Invalid spans (zero trace or span id, missing start or end time, end
// before start, a time past LatestTime, a start outside Limits.MaxSpanAge
// and MaxSpanFuture around opts.Now) are left out and counted in Rejected, whose Message names the
// first few with their index in the request (resource, scope and span order,
// from 0) and name; the valid spans of the request are kept.
//
// Each attribute is looked up on the span first, then on the resource; an
// alias chain is resolved on the span as a whole before the resource is
// consulted, so any alias on the span beats the resource. Span attributes
// that became a column verbatim (the winning alias of a chain) or content
// are not repeated in AttrKeys; losing aliases, and values that were
// transformed on the way (a provider spelling mapped to its canonical name,
// http.request.resend_count), stay. Resource attributes are all kept.
//
// Usage is read with the reading of the span's instrumentation (see
// Readings and derive). Spans that are not inference spans (agent,
// workflow, tool) and spans with gen_ai.aggregated_usage.* keys repeat their
// children's usage: their tokens are stored with UsageMode
// schema.UsageAggregated, and they are priced like any other span; readers
// count them only for a run whose inference spans carry no usage (see
// package query), so nothing is counted twice.
func Normalize(td ptrace.Traces, opts Options) (Batch, Rejected) {
	return NormalizeTraces(wire.FromPdata(td), opts)
}

// NormalizeTraces is Normalize over Traces, as the receiver's protobuf
// decoder reads them. The rows' strings may point into whatever tr's strings
// point into (the request body), which must then outlive the rows.
func NormalizeTraces(tr wire.Traces, opts Options) (Batch, Rejected) {
	return NormalizeTracesInto(Batch{}, tr, opts)
}

// NormalizeTracesInto is NormalizeTraces appending the rows to dst's
// slices, so that a caller done with a batch's rows once it has stored them
// (the receiver in front of the durable log) reuses their memory for the
// next request instead of allocating it again. On return dst's slices are
// the returned batch's prefix.
func NormalizeTracesInto(dst Batch, tr wire.Traces, opts Options) (Batch, Rejected) {
	n := normalizer{opts: &opts, lim: opts.Limits, table: opts.Usage.table(), confidence: ConfidenceRules()}
	if opts.Now != nil {
		n.now = opts.Now().UTC()
	} else {
		n.now = time.Now().UTC()
	}
	batch := dst
	batch.Spans = slices.Grow(batch.Spans, tr.SpanCount())
	var rej Rejected
	var msg strings.Builder
	index := 0
	for i := range tr.Resources {
		rs := &tr.Resources[i]
		var rc *resourceCtx // built on the first valid span of this resource
		for j := range rs.Scopes {
			ss := &rs.Scopes[j]
			for k := range ss.Spans {
				sp := &ss.Spans[k]
				if problem := n.validate(sp); problem != "" {
					rej.Spans++
					if rej.Spans <= maxRejectMessages {
						if msg.Len() > 0 {
							msg.WriteString("; ")
						}
						fmt.Fprintf(&msg, "span %d (name %q): %s", index, clean(sp.Name, 128), problem)
					}
					index++
					continue
				}
				if rc == nil {
					rc = n.resource(rs.Attributes)
				}
				batch.Spans = append(batch.Spans, schema.Span{})
				n.fill(&batch.Spans[len(batch.Spans)-1], sp, rc, ss, &batch.Contents)
				index++
			}
		}
	}
	if rej.Spans > maxRejectMessages {
		fmt.Fprintf(&msg, "; and %d more", rej.Spans-maxRejectMessages)
	}
	rej.Message = msg.String()
	return batch, rej
}

// latestNs is LatestTime in Unix nanoseconds, as spans carry times.
var latestNs = uint64(LatestTime.UnixNano())

// validate names the problems of a span that cannot be stored, "" when
// none: ids, times, and times outside what the store holds or the limits'
// window around the request's arrival (Limits.MaxSpanAge, MaxSpanFuture).
func (n *normalizer) validate(sp *wire.Span) string {
	var problems []string
	if sp.TraceID == [16]byte{} {
		problems = append(problems, "trace id is missing or all zero (must be 16 non-zero bytes)")
	}
	if sp.SpanID == [8]byte{} {
		problems = append(problems, "span id is missing or all zero (must be 8 non-zero bytes)")
	}
	start, end := sp.Start, sp.End
	switch {
	case start == 0:
		problems = append(problems, "start time missing")
	case end == 0:
		problems = append(problems, "end time missing")
	case start > latestNs:
		problems = append(problems, "start time past "+LatestTime.Format(time.RFC3339)+", the latest the store holds")
	case end > latestNs:
		problems = append(problems, "end time past "+LatestTime.Format(time.RFC3339)+", the latest the store holds")
	case end < start:
		problems = append(problems, "end time before start time")
	case n.lim.MaxSpanAge > 0 && start < uint64(n.now.Add(-n.lim.MaxSpanAge).UnixNano()):
		problems = append(problems, fmt.Sprintf("start time %s is more than %s before arrival (the span age limit)",
			time.Unix(0, int64(start)).UTC().Format(time.RFC3339), n.lim.MaxSpanAge))
	case n.lim.MaxSpanFuture > 0 && start > uint64(n.now.Add(n.lim.MaxSpanFuture).UnixNano()):
		problems = append(problems, fmt.Sprintf("start time %s is more than %s after arrival (the span future limit)",
			time.Unix(0, int64(start)).UTC().Format(time.RFC3339), n.lim.MaxSpanFuture))
	}
	return strings.Join(problems, ", ")
}

// resourceCtx is what every span of one ResourceSpans shares.
type resourceCtx struct {
	view    attrView
	keys    []string // shared by the rows of this resource; never mutated
	values  []string
	service string
}

// normalizer holds per-call scratch space, reused span after span.
type normalizer struct {
	opts     *Options
	lim      Limits
	now      time.Time
	res      *resourceCtx
	span     attrView
	meta     []attrMeta
	consumed [fieldCount]bool
	pairs    []kv
	// columnKeys are the current span's attribute keys stored in columns
	// (reused from span to span; each span gets its own copy).
	columnKeys []string
	notes      []kv // tally.* attributes derive adds to the span
	table      []Reading
	// confidence is the cost confidence rules; corrected names the one
	// whose correction derive made on the current span ("" for none).
	confidence []ConfidenceRule
	corrected  string
	selected   map[spanIdentity][]*ConfidenceRule // confidenceRules, per request
	readings   map[spanIdentity]appliedReading    // resolved readings, per request
	scratch    []byte
	scratch2   []byte
	hasher     canonical.Hasher // ArgsHash, its buffers kept across the request's tool spans
}

// found is the winner of an alias chain.
type found struct {
	h      *hit
	f      field
	onSpan bool
}

// first resolves an alias chain: the first present field on the span, then
// on the resource. fNone entries (conditional aliases that do not apply) are
// skipped.
func (n *normalizer) first(chain ...field) (found, bool) {
	for _, f := range chain {
		if h := n.span.get(f); h != nil && h.act != ActionDrop && h.present() {
			return found{h: h, f: f, onSpan: true}, true
		}
	}
	for _, f := range chain {
		if h := n.res.view.get(f); h != nil && h.act != ActionDrop && h.present() {
			return found{h: h, f: f}, true
		}
	}
	return found{}, false
}

// firstNumber is first for numeric chains: a value under a privacy rule is
// unreadable and counts as absent.
func (n *normalizer) firstNumber(chain ...field) (found, bool) {
	for _, f := range chain {
		if h := n.span.get(f); h != nil && h.present() && h.act == "" {
			return found{h: h, f: f, onSpan: true}, true
		}
	}
	for _, f := range chain {
		if h := n.res.view.get(f); h != nil && h.present() && h.act == "" {
			return found{h: h, f: f}, true
		}
	}
	return found{}, false
}

// consume marks a span attribute as stored in a column.
func (n *normalizer) consume(fd found) {
	if fd.onSpan {
		n.consumed[fd.f] = true
	}
}

// text is the value of h for a column or attribute, after its privacy rule,
// UTF-8 repair and truncation at MaxAttrValueBytes.
func (n *normalizer) text(h *hit) string {
	return n.ruled(h.v, h.act, n.lim.MaxAttrValueBytes)
}

// ruled applies a privacy action to v, then repairs and truncates its text.
func (n *normalizer) ruled(v wire.Value, act Action, max int) string {
	switch act {
	case ActionRedact:
		return RedactedValue
	case ActionHash:
		return hashValue(valueText(v, &n.scratch))
	}
	return clean(valueText(v, &n.scratch), max)
}

// str resolves a string chain into a column value and consumes the winner.
func (n *normalizer) str(chain ...field) string {
	fd, ok := n.first(chain...)
	if !ok {
		return ""
	}
	n.consume(fd)
	return n.text(fd.h)
}

// id resolves an identifier chain (tool call id, step id). Placeholders that
// SDKs send when they have no id ("<not specified>" from Google ADK, "null",
// "undefined", "None", empty) identify nothing: the column stays empty and
// the value as sent stays visible as an attribute, so no two unrelated calls
// share an id and look like retries of each other.
func (n *normalizer) id(chain ...field) string {
	fd, ok := n.first(chain...)
	if !ok {
		return ""
	}
	v := n.text(fd.h)
	if isPlaceholderID(v) {
		return ""
	}
	n.consume(fd)
	return v
}

// isPlaceholderID reports whether an id value is a stand-in for "no id".
func isPlaceholderID(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) > len("<not specified>") { // the longest placeholder
		return false // a real id, decided without folding its case
	}
	for _, p := range [...]string{"", "<not specified>", "not specified", "null", "undefined", "none", "nil", "<none>", "n/a", "unknown"} {
		if strings.EqualFold(v, p) {
			return true
		}
	}
	return false
}

func (n *normalizer) resource(attrs []wire.KeyValue) *resourceCtx {
	rc := &resourceCtx{}
	priv := &n.opts.Privacy
	rc.view.load(attrs, priv, nil)
	if h := rc.view.get(fServiceName); h != nil && h.act != ActionDrop {
		rc.service = n.text(h)
	}
	pairs := make([]kv, 0, len(attrs))
	for _, a := range attrs {
		k, v := a.Key, a.Value
		act := priv.action(k)
		if act == ActionDrop {
			continue
		}
		pairs = append(pairs, kv{k: clean(k, n.lim.MaxAttrValueBytes), v: n.ruled(v, act, n.lim.MaxAttrValueBytes)})
	}
	rc.keys, rc.values = splitSorted(pairs)
	return rc
}

// fill turns one valid span into out and appends its content rows.
func (n *normalizer) fill(out *schema.Span, sp *wire.Span, rc *resourceCtx, scope *wire.ScopeSpans, contents *[]schema.Content) {
	n.res = rc
	n.consumed = [fieldCount]bool{}
	attrs := sp.Attributes
	n.span.load(attrs, &n.opts.Privacy, &n.meta)
	maxVal := n.lim.MaxAttrValueBytes

	out.Project = n.opts.Project
	out.TraceID, out.SpanID, out.ParentSpanID = idsHex(&sp.TraceID, &sp.SpanID, &sp.ParentSpanID)
	start, end := sp.Start, sp.End
	out.Start = time.Unix(int64(start/1e9), 0).UTC()
	out.StartNs, out.EndNs, out.DurationNs = start, end, end-start
	out.Name = clean(sp.Name, maxVal)
	out.Kind = kindString(ptrace.SpanKind(sp.Kind))
	out.Status, out.StatusMessage = statusString(ptrace.StatusCode(sp.StatusCode)), clean(sp.StatusMessage, maxVal)
	out.Service = rc.service
	out.ScopeName, out.ScopeVersion = clean(scope.Name, maxVal), clean(scope.Version, maxVal)
	out.IngestedAt = n.now

	// Kinds that condition other aliases.
	var oiKind, tlKind string
	if fd, ok := n.first(fOIKind); ok {
		oiKind = strings.ToUpper(n.text(fd.h))
	}
	if fd, ok := n.first(fTLKind); ok {
		tlKind = strings.ToLower(n.text(fd.h))
	}
	tlToolName, tlAgentName, tlToolIO := fNone, fNone, tlKind == "tool"
	switch tlKind {
	case "tool":
		tlToolName = fTLEntityName
	case "agent":
		tlAgentName = fTLEntityName
	}
	oiTool := oiKind == "TOOL"

	// Model and provider.
	out.Model = n.str(fRespModel, fReqModel, fLLMModelName, fAIRespModel, fAIModelID, fLFModel)
	out.ResponseModel = n.str(fRespModel, fAIRespModel)
	out.RequestModel = n.str(fReqModel, fAIModelID)
	out.Provider = n.provider(out.Model)

	// Who and what.
	out.AgentName = n.str(fAgentName, fAgentNameAlt, tlAgentName, fAIFunctionID)
	out.AgentID = n.str(fAgentID, fAgentIDAlt)
	out.ConversationID = n.str(fConvID, fSessionID, fLFSessionID, fTLSessionID, fAISessionID)
	out.UserID = n.str(fUserID, fLFUserID, fTLUserID, fAIUserID)
	out.TaskName = n.str(fTaskName)
	out.ToolName = n.str(fToolName, fToolNameAlt, fAIToolName, tlToolName)
	out.ToolCallID = n.id(fToolCallID, fToolCallIDAlt, fToolIDAlt, fAIToolCallID)
	out.ToolType = n.str(fToolType)
	out.StepID = n.id(fStepID, fStepIDDot, fStepIDUnder, fIdempotencyKey)
	out.ErrorType = n.str(fErrorType)
	out.SpanType, out.Operation = n.spanType(sp.Name, oiKind, tlKind, out.ToolName != "", out.Model != "")
	n.attempt(out)
	n.finishReasons(out)
	n.ttfc(out)

	// Usage and cost.
	n.derive(out, nil)

	// Content, then what remains of the attributes.
	n.content(out, contents, oiTool, tlToolIO)
	droppedEvents := n.events(out, sp.Events)
	n.attributes(out, attrs, droppedEvents)
	out.LinksJSON = n.links(sp.Links)
}

// spanType applies the span-type alias chain of docs/instrumentations.md.
func (n *normalizer) spanType(name, oiKind, tlKind string, hasTool, hasModel bool) (spanType, op string) {
	if fd, ok := n.first(fOpName); ok {
		raw := strings.ToLower(strings.TrimSpace(n.text(fd.h)))
		op = canonicalOperation(raw)
		if op == raw {
			n.consume(fd) // a mapped name stays visible as sent
		}
		return spanTypeFromOperation(op), op
	}
	if t, op, ok := spanTypeFromOpenInference(oiKind); ok {
		return t, op
	}
	if t, op, ok := spanTypeFromTraceloop(tlKind); ok {
		return t, op
	}
	if fd, ok := n.first(fLFType); ok {
		if t, op, ok := spanTypeFromLangfuse(n.text(fd.h)); ok {
			return t, op
		}
	}
	if t, op, ok := spanTypeFromVercel(name); ok {
		return t, op
	}
	if fd, ok := n.first(fAIOperationID); ok {
		if t, op, ok := spanTypeFromVercel(fd.h.v.Str()); ok {
			return t, op
		}
	}
	switch {
	case hasTool:
		return schema.TypeTool, "execute_tool"
	case hasModel:
		return schema.TypeInference, "chat"
	}
	return schema.TypeOther, ""
}

// provider resolves the provider chain, canonicalizes the value, and infers
// the provider from the model name when the value is missing or not a known
// provider (a framework name such as strands-agents). When nothing can be
// inferred (llama, qwen, …) the value stays as given, lowercased.
func (n *normalizer) provider(model string) string {
	fd, ok := n.first(fProviderName, fSystem, fLLMProvider, fLLMSystem, fAIModelProvider)
	var raw string
	if ok {
		raw = n.text(fd.h)
		if fd.f == fAIModelProvider {
			raw = vercelProviderPrefix(raw)
		}
	}
	p, known := canonicalProvider(raw)
	if known {
		if fd.f != fAIModelProvider && p == raw {
			n.consume(fd)
		}
		return p
	}
	if inferred, ok := providerFromModel(model); ok {
		return inferred
	}
	return p
}

// attempt fills Attempt from the retry aliases; http.request.resend_count N
// means attempt N+1.
func (n *normalizer) attempt(out *schema.Span) {
	fd, ok := n.firstNumber(fToolAttempt, fRetryAttempt, fAttempt, fResendCount)
	if !ok {
		return
	}
	a, ok := tokenValue(fd.h.v)
	if !ok || a >= math.MaxUint32 {
		return
	}
	if fd.f == fResendCount {
		out.Attempt = uint32(a) + 1
		return
	}
	out.Attempt = uint32(a)
	n.consume(fd)
}

// finishReasons reads a string array, a single string, or a string holding
// a JSON array of strings.
func (n *normalizer) finishReasons(out *schema.Span) {
	fd, ok := n.first(fFinishReasons, fAIFinishReason)
	if !ok {
		return
	}
	v := fd.h.v
	if fd.h.act != "" || v.Type() != wire.ValueSlice {
		s := n.text(fd.h)
		if fd.h.act == "" && v.Type() == wire.ValueStr && strings.HasPrefix(s, "[") {
			if list, ok := stringList(s); ok {
				out.FinishReasons = list
				n.consume(fd)
				return
			}
		}
		out.FinishReasons = []string{s}
		n.consume(fd)
		return
	}
	sl := v.Slice()
	out.FinishReasons = make([]string, len(sl))
	for i := range out.FinishReasons {
		out.FinishReasons[i] = clean(valueText(sl[i].Value, &n.scratch), n.lim.MaxAttrValueBytes)
	}
	n.consume(fd)
}

// stringList parses a JSON array of strings, as some SDKs send
// finish_reasons as one string.
func stringList(s string) ([]string, bool) {
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, false
	}
	return out, true
}

// ttfc fills TTFCMs from gen_ai.response.time_to_first_chunk (seconds) or
// the Vercel AI SDK's ai.response.msToFirstChunk (milliseconds).
func (n *normalizer) ttfc(out *schema.Span) {
	fd, ok := n.firstNumber(fTTFC, fAIMsToFirst)
	if !ok {
		return
	}
	f, ok := numberValue(fd.h.v)
	if !ok || f < 0 {
		return
	}
	if fd.f == fTTFC {
		f *= 1000
	}
	out.TTFCMs = f
	n.consume(fd)
}

// contentKind maps a content field to its schema.Content kind.
func contentKind(f field, oiTool, tlTool bool) string {
	switch f {
	case fToolArgs, fAIToolArgs:
		return schema.ContentToolArguments
	case fInputValue:
		if oiTool {
			return schema.ContentToolArguments
		}
		return schema.ContentInputMessages
	case fTLEntityInput:
		if tlTool {
			return schema.ContentToolArguments
		}
		return schema.ContentInputMessages
	case fToolResult, fAIToolResult:
		return schema.ContentToolResult
	case fOutputValue:
		if oiTool {
			return schema.ContentToolResult
		}
		return schema.ContentOutputMessages
	case fTLEntityOutput:
		if tlTool {
			return schema.ContentToolResult
		}
		return schema.ContentOutputMessages
	case fInputMessages, fPrompt, fAIPromptMsgs, fAIPrompt:
		return schema.ContentInputMessages
	case fOutputMessages, fCompletion, fAIResponseText, fAIResponseObj, fAIResponseCalls:
		return schema.ContentOutputMessages
	case fSystemInstr:
		return schema.ContentSystemInstructions
	case fToolDefs, fAIPromptTools:
		return schema.ContentToolDefinitions
	}
	return ""
}

// content computes ArgsHash for tool spans and turns the span's content
// attributes into content rows (in field order, so deterministically).
func (n *normalizer) content(out *schema.Span, contents *[]schema.Content, oiTool, tlTool bool) {
	if out.SpanType == schema.TypeTool {
		argChain := [...]field{fToolArgs, fNone, fAIToolArgs, fNone}
		if oiTool {
			argChain[1] = fInputValue
		}
		if tlTool {
			argChain[3] = fTLEntityInput
		}
		for _, f := range argChain {
			// ArgsHash comes from the original arguments, before privacy
			// rules (a dropped key still identifies the call).
			if h := n.span.get(f); h != nil && h.present() {
				out.ArgsHash = n.hasher.Hash(n.rawText(h.v))
				break
			}
		}
	}
	if n.opts.Privacy.NoContent {
		return
	}
	for f := fToolArgs; f < fieldCount; f++ {
		h := n.span.get(f)
		if h == nil || h.act == ActionDrop || !h.present() {
			continue
		}
		var value string
		var truncated bool
		switch h.act {
		case ActionRedact:
			value = RedactedValue
		case ActionHash:
			value = hashValue(n.rawText(h.v))
		default:
			value, truncated = truncate(validUTF8(n.rawText(h.v)), n.lim.MaxContentBytes)
		}
		c := schema.Content{
			Project:   out.Project,
			TraceID:   out.TraceID,
			SpanID:    out.SpanID,
			Start:     out.Start,
			Kind:      contentKind(f, oiTool, tlTool),
			SourceKey: validUTF8(h.key),
			Value:     value,
		}
		if truncated {
			c.Truncated = 1
		}
		*contents = append(*contents, c)
	}
}

// rawText is a content value's full text: a string as sent, a structured
// value as JSON.
func (n *normalizer) rawText(v wire.Value) string {
	if v.Type() == wire.ValueStr {
		return v.Str()
	}
	return valueText(v, &n.scratch)
}

// attributes fills AttrKeys/AttrValues with the span attributes that were not
// consumed into columns or content, after privacy rules and limits, and the
// resource columns.
func (n *normalizer) attributes(out *schema.Span, attrs []wire.KeyValue, droppedEvents int) {
	out.ResourceKeys, out.ResourceValues = n.res.keys, n.res.values
	n.pairs = n.pairs[:0]
	maxAttrs, dropped, i := n.lim.MaxAttrsPerSpan, 0, 0
	noContent := n.opts.Privacy.NoContent
	n.columnKeys = n.columnKeys[:0]
	for _, a := range attrs {
		k, v := a.Key, a.Value
		m := n.meta[i]
		i++
		if m.act == ActionDrop || m.f != fNone && isContentField(m.f) {
			continue
		}
		if m.f != fNone && n.consumed[m.f] { // stored in a column: its key is recorded
			if ck := clean(k, n.lim.MaxAttrValueBytes); !slices.Contains(n.columnKeys, ck) {
				n.columnKeys = append(n.columnKeys, ck)
			}
			continue
		}
		if noContent && isFlattenedContentKey(k) {
			continue
		}
		if slices.Contains(derivedKeys[:], k) {
			continue
		}
		if maxAttrs > 0 && len(n.pairs) >= maxAttrs {
			dropped++
			continue
		}
		n.pairs = append(n.pairs, kv{k: clean(k, n.lim.MaxAttrValueBytes), v: n.ruled(v, m.act, n.lim.MaxAttrValueBytes)})
	}
	if dropped > 0 {
		n.pairs = append(n.pairs, kv{k: AttrDroppedAttributes, v: strconv.Itoa(dropped)})
	}
	if droppedEvents > 0 {
		n.pairs = append(n.pairs, kv{k: AttrDroppedEvents, v: strconv.Itoa(droppedEvents)})
	}
	n.pairs = append(n.pairs, n.notes...)
	out.AttrKeys, out.AttrValues, out.ColumnKeys = splitSortedWith(n.pairs, n.columnKeys)
}

// events fills the event columns, up to MaxEventsPerSpan, and returns how
// many events were dropped past it.
func (n *normalizer) events(out *schema.Span, evs []wire.Event) int {
	count := len(evs)
	if count == 0 {
		return 0
	}
	dropped := 0
	if max := n.lim.MaxEventsPerSpan; max > 0 && count > max {
		dropped, count = count-max, max
	}
	out.EventNames = make([]string, count)
	out.EventTimeNs = make([]uint64, count)
	out.EventAttrs = make([]string, count)
	priv := &n.opts.Privacy
	maxVal := n.lim.MaxAttrValueBytes
	for i := 0; i < count; i++ {
		ev := &evs[i]
		name := ev.Name
		out.EventNames[i] = clean(name, maxVal)
		out.EventTimeNs[i] = ev.Time
		b := append(n.scratch[:0], '{')
		if !(priv.NoContent && isContentEvent(name)) {
			first := true
			for _, a := range ev.Attributes {
				k, v := a.Key, a.Value
				act := priv.action(k)
				if act == ActionDrop {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				b = canonical.AppendString(b, k)
				b = append(b, ':')
				switch act {
				case ActionRedact:
					b = canonical.AppendString(b, RedactedValue)
				case ActionHash:
					b = canonical.AppendString(b, hashValue(valueText(v, &n.scratch2)))
				default:
					b = appendValueJSON(b, v, maxVal)
				}
			}
		}
		b = append(b, '}')
		out.EventAttrs[i] = string(b)
		n.scratch = b
	}
	return dropped
}

// links renders span links as a JSON array of {trace_id, span_id}, "" when
// there are none.
func (n *normalizer) links(ls []wire.Link) string {
	if len(ls) == 0 {
		return ""
	}
	b := append(n.scratch[:0], '[')
	for i := range ls {
		if i > 0 {
			b = append(b, ',')
		}
		tid, sid := ls[i].TraceID, ls[i].SpanID
		b = append(b, `{"trace_id":"`...)
		b = hex.AppendEncode(b, tid[:])
		b = append(b, `","span_id":"`...)
		b = hex.AppendEncode(b, sid[:])
		b = append(b, `"}`...)
	}
	b = append(b, ']')
	n.scratch = b
	return string(b)
}

// idsHex renders the three ids as lowercase hex in one allocation (the
// strings share it); the parent is "" when empty.
func idsHex(trace *[16]byte, span, parent *[8]byte) (traceHex, spanHex, parentHex string) {
	var b [64]byte
	hex.Encode(b[:32], trace[:])
	hex.Encode(b[32:48], span[:])
	n := 48
	if *parent != [8]byte{} {
		hex.Encode(b[48:], parent[:])
		n = 64
	}
	s := string(b[:n])
	if n == 64 {
		parentHex = s[48:64]
	}
	return s[:32], s[32:48], parentHex
}

func kindString(k ptrace.SpanKind) string {
	switch k {
	case ptrace.SpanKindInternal:
		return "internal"
	case ptrace.SpanKindServer:
		return "server"
	case ptrace.SpanKindClient:
		return "client"
	case ptrace.SpanKindProducer:
		return "producer"
	case ptrace.SpanKindConsumer:
		return "consumer"
	}
	return "unspecified"
}

func statusString(c ptrace.StatusCode) string {
	switch c {
	case ptrace.StatusCodeOk:
		return schema.StatusOK
	case ptrace.StatusCodeError:
		return schema.StatusError
	}
	return schema.StatusUnset
}
