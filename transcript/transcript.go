// Package transcript turns what instrumentations capture of a model call
// into one chat shape: messages with a role and parts (text, tool calls,
// tool results, reasoning). It reads every dialect tally stores — the
// OpenTelemetry "parts" JSON (gen_ai.input.messages, output.messages,
// system_instructions), the Vercel AI SDK's ai.prompt / ai.prompt.messages
// / ai.response.*, OpenInference's input.value / output.value and flattened
// llm.input_messages.N.*, OpenLLMetry's flattened gen_ai.prompt.N.* and
// gen_ai.completion.N.*, the deprecated gen_ai.prompt / gen_ai.completion,
// and the per-message span events (gen_ai.user.message, gen_ai.choice,
// gen_ai.content.prompt, gen_ai.client.inference.operation.details) — so the
// UI renders a conversation, not raw JSON. It has no I/O: callers pass what
// they loaded.
package transcript

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// Part types.
const (
	PartText       = "text"
	PartToolCall   = "tool_call"
	PartToolResult = "tool_result"
	PartReasoning  = "reasoning"
	// PartOther is content the chat view cannot render as text (an image,
	// a file); Text names what it was.
	PartOther = "other"
)

// Part is one piece of a message.
type Part struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// ID is a tool call's id (tool_call) or the id of the call a result
	// answers (tool_result); Name the tool's name.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Arguments of a tool call, as JSON text.
	Arguments string `json:"arguments,omitempty"`
	// Result of a tool call, as sent (JSON or text).
	Result string `json:"result,omitempty"`
}

// Message is one chat turn: system, user, assistant or tool.
type Message struct {
	Role         string `json:"role"`
	Parts        []Part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// Chat is a model call's conversation: what it was sent (system
// instructions first) and what it answered, with the attribute or event
// each side was read from.
type Chat struct {
	Input        []Message `json:"input"`
	Output       []Message `json:"output"`
	InputSource  string    `json:"input_source,omitempty"`
	OutputSource string    `json:"output_source,omitempty"`
}

// Empty reports whether nothing was read.
func (c Chat) Empty() bool { return len(c.Input) == 0 && len(c.Output) == 0 }

// Event is a span event: its name and attributes.
type Event struct {
	Name       string
	Attributes map[string]any
}

// Source is what one span carries: captured content values by attribute
// name (tally's content rows), the span's other attributes (string
// values, JSON for non-scalars) and its events.
type Source struct {
	Content    map[string]string
	Attributes map[string]string
	Events     []Event
	// FinishReasons are the span's (gen_ai.response.finish_reasons and its
	// aliases, which ingest moves out of the attributes).
	FinishReasons []string
}

// Read builds a span's chat. Each side takes the first dialect present, in
// the order: OpenTelemetry parts JSON, Vercel AI SDK, flattened attributes
// (OpenInference, OpenLLMetry), deprecated gen_ai.prompt /
// gen_ai.completion, OpenInference input.value / output.value (after the
// flattened messages the same span carries, which keep roles), span
// events. A value
// that does not parse as its dialect is shown as text, never dropped.
func Read(src Source) Chat {
	var c Chat
	system := systemMessages(src)
	for _, read := range []func(Source) ([]Message, string){
		inputOTel, inputVercel, inputFlatOpenInference, inputFlatOpenLLMetry, inputDeprecated, inputOpenInference, inputEvents,
	} {
		if msgs, from := read(src); len(msgs) > 0 {
			c.Input, c.InputSource = msgs, from
			break
		}
	}
	if len(system) > 0 && (len(c.Input) == 0 || c.Input[0].Role != "system") {
		c.Input = append(system, c.Input...)
		if c.InputSource == "" {
			c.InputSource = "gen_ai.system_instructions"
		}
	}
	for _, read := range []func(Source) ([]Message, string){
		outputOTel, outputVercel, outputFlatOpenInference, outputFlatOpenLLMetry, outputDeprecated, outputOpenInference, outputEvents,
	} {
		if msgs, from := read(src); len(msgs) > 0 {
			c.Output, c.OutputSource = msgs, from
			break
		}
	}
	// A single answer without its own finish reason takes the span's.
	if len(c.Output) == 1 && c.Output[0].FinishReason == "" && len(src.FinishReasons) == 1 {
		c.Output[0].FinishReason = src.FinishReasons[0]
	}
	return c
}

// ---------------------------------------------------------------- OpenTelemetry parts JSON

func systemMessages(src Source) []Message {
	v, ok := src.Content["gen_ai.system_instructions"]
	if !ok {
		return nil
	}
	var parts []map[string]any
	if json.Unmarshal([]byte(v), &parts) != nil {
		return []Message{{Role: "system", Parts: []Part{{Type: PartText, Text: v}}}}
	}
	m := Message{Role: "system"}
	for _, p := range parts {
		m.Parts = append(m.Parts, otelPart(p))
	}
	return []Message{m}
}

func inputOTel(src Source) ([]Message, string) {
	return fromKey(src.Content, "gen_ai.input.messages", "user")
}

func outputOTel(src Source) ([]Message, string) {
	return fromKey(src.Content, "gen_ai.output.messages", "assistant")
}

// fromKey parses values[key] as a list of messages in any JSON dialect;
// a value that is not JSON becomes one text message of role.
func fromKey(values map[string]string, key, role string) ([]Message, string) {
	v, ok := values[key]
	if !ok || strings.TrimSpace(v) == "" {
		return nil, ""
	}
	return parseMessages(v, role), key
}

// parseMessages reads a JSON list of messages (OTel parts, OpenAI,
// Anthropic or Vercel shapes), an object holding one ({"messages": …},
// OpenAI's {"choices": …}), or text.
func parseMessages(v, role string) []Message {
	var decoded any
	if json.Unmarshal([]byte(v), &decoded) != nil {
		return []Message{textMessage(role, v)}
	}
	return messagesFrom(decoded, v, role)
}

// messagesFrom reads decoded JSON as messages; raw is its text, shown as
// one message when the value has no message shape.
func messagesFrom(decoded any, raw, role string) []Message {
	switch x := decoded.(type) {
	case []any:
		var out []Message
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				out = append(out, message(m, role))
			} else if s, ok := e.(string); ok {
				out = append(out, textMessage(role, s))
			}
		}
		return out
	case map[string]any:
		if ms, ok := x["messages"].([]any); ok {
			return messagesFrom(ms, raw, role)
		}
		if cs, ok := x["choices"].([]any); ok {
			var out []Message
			for _, c := range cs {
				cm, _ := c.(map[string]any)
				if msg, ok := cm["message"].(map[string]any); ok {
					m := message(msg, role)
					m.FinishReason = str(cm["finish_reason"])
					out = append(out, m)
				}
			}
			return out
		}
		_, hasRole := x["role"]
		_, hasContent := x["content"]
		if hasRole || hasContent {
			return []Message{message(x, role)}
		}
	case string:
		return []Message{textMessage(role, x)}
	}
	return []Message{textMessage(role, raw)}
}

// textMessage is one text part of role.
func textMessage(role, text string) Message {
	return Message{Role: role, Parts: []Part{{Type: PartText, Text: text}}}
}

// message reads one message object of any dialect.
func message(m map[string]any, role string) Message {
	out := Message{Role: str(m["role"]), FinishReason: str(m["finish_reason"])}
	if out.Role == "" {
		out.Role = role
	}
	if parts, ok := m["parts"].([]any); ok { // OpenTelemetry
		for _, p := range parts {
			if pm, ok := p.(map[string]any); ok {
				out.Parts = append(out.Parts, otelPart(pm))
			}
		}
		return out
	}
	switch c := m["content"].(type) {
	case string:
		if c != "" {
			out.Parts = append(out.Parts, Part{Type: PartText, Text: c})
		}
	case []any:
		for _, p := range c {
			switch pm := p.(type) {
			case map[string]any:
				out.Parts = append(out.Parts, contentPart(pm))
			case string:
				out.Parts = append(out.Parts, Part{Type: PartText, Text: pm})
			}
		}
	case nil:
	default:
		out.Parts = append(out.Parts, Part{Type: PartText, Text: jsonText(c)})
	}
	// OpenAI: assistant tool_calls; tool messages answer tool_call_id.
	if calls, ok := m["tool_calls"].([]any); ok {
		for _, c := range calls {
			cm, _ := c.(map[string]any)
			fn, _ := cm["function"].(map[string]any)
			p := Part{Type: PartToolCall, ID: str(cm["id"]), Name: str(cm["name"]), Arguments: jsonText(cm["arguments"])}
			if fn != nil {
				p.Name, p.Arguments = str(fn["name"]), jsonText(fn["arguments"])
			}
			out.Parts = append(out.Parts, p)
		}
	}
	if id := str(m["tool_call_id"]); id != "" && out.Role == "tool" {
		for i := range out.Parts {
			if out.Parts[i].Type == PartText {
				out.Parts[i] = Part{Type: PartToolResult, ID: id, Result: out.Parts[i].Text}
			}
		}
	}
	if out.Parts == nil {
		out.Parts = []Part{}
	}
	return out
}

// otelPart reads a part of the OpenTelemetry schema: text, tool_call,
// tool_call_response, reasoning; others are named.
func otelPart(p map[string]any) Part {
	switch t := str(p["type"]); t {
	case "text":
		return Part{Type: PartText, Text: str(p["content"])}
	case "tool_call":
		return Part{Type: PartToolCall, ID: str(p["id"]), Name: str(p["name"]), Arguments: jsonText(p["arguments"])}
	case "tool_call_response":
		return Part{Type: PartToolResult, ID: str(p["id"]), Result: jsonText(p["response"])}
	case "reasoning":
		return Part{Type: PartReasoning, Text: str(p["content"])}
	default:
		return Part{Type: PartOther, Text: "[" + t + "]"}
	}
}

// contentPart reads a content part of the OpenAI, Anthropic or Vercel
// shapes: text, tool-call / tool_use, tool-result / tool_result,
// reasoning / thinking.
func contentPart(p map[string]any) Part {
	switch t := str(p["type"]); t {
	case "text", "input_text", "output_text":
		return Part{Type: PartText, Text: str(p["text"])}
	case "tool-call": // Vercel: input (v5) or args (v4)
		args := p["input"]
		if args == nil {
			args = p["args"]
		}
		return Part{Type: PartToolCall, ID: str(p["toolCallId"]), Name: str(p["toolName"]), Arguments: jsonText(args)}
	case "tool_use": // Anthropic
		return Part{Type: PartToolCall, ID: str(p["id"]), Name: str(p["name"]), Arguments: jsonText(p["input"])}
	case "tool-result": // Vercel: output {type, value} (v5) or result (v4)
		res := p["result"]
		if o, ok := p["output"].(map[string]any); ok {
			res = o["value"]
		} else if p["output"] != nil {
			res = p["output"]
		}
		return Part{Type: PartToolResult, ID: str(p["toolCallId"]), Name: str(p["toolName"]), Result: jsonText(res)}
	case "tool_result": // Anthropic
		return Part{Type: PartToolResult, ID: str(p["tool_use_id"]), Result: jsonText(p["content"])}
	case "reasoning", "thinking":
		text := str(p["text"])
		if text == "" {
			text = str(p["thinking"])
		}
		return Part{Type: PartReasoning, Text: text}
	default:
		return Part{Type: PartOther, Text: "[" + t + "]"}
	}
}

// ---------------------------------------------------------------- Vercel AI SDK

func inputVercel(src Source) ([]Message, string) {
	if msgs, from := fromKey(src.Content, "ai.prompt.messages", "user"); len(msgs) > 0 {
		return msgs, from
	}
	v, ok := src.Content["ai.prompt"]
	if !ok {
		return nil, ""
	}
	// ai.prompt: {"system"?, "prompt"? | "messages"?}
	var p struct {
		System   string          `json:"system"`
		Prompt   json.RawMessage `json:"prompt"`
		Messages json.RawMessage `json:"messages"`
	}
	if json.Unmarshal([]byte(v), &p) != nil {
		return []Message{{Role: "user", Parts: []Part{{Type: PartText, Text: v}}}}, "ai.prompt"
	}
	var out []Message
	if p.System != "" {
		out = append(out, Message{Role: "system", Parts: []Part{{Type: PartText, Text: p.System}}})
	}
	switch {
	case len(p.Messages) > 0 && string(p.Messages) != "null":
		out = append(out, parseMessages(string(p.Messages), "user")...)
	case len(p.Prompt) > 0 && string(p.Prompt) != "null":
		out = append(out, parseMessages(string(p.Prompt), "user")...)
	}
	return out, "ai.prompt"
}

func outputVercel(src Source) ([]Message, string) {
	text, hasText := src.Content["ai.response.text"]
	obj, hasObj := src.Content["ai.response.object"]
	calls, hasCalls := src.Content["ai.response.toolCalls"]
	if !hasText && !hasObj && !hasCalls {
		return nil, ""
	}
	m := Message{Role: "assistant", Parts: []Part{}}
	from := []string{}
	if hasText && text != "" {
		m.Parts = append(m.Parts, Part{Type: PartText, Text: text})
		from = append(from, "ai.response.text")
	}
	if hasObj {
		m.Parts = append(m.Parts, Part{Type: PartText, Text: obj})
		from = append(from, "ai.response.object")
	}
	if hasCalls {
		var list []map[string]any
		if json.Unmarshal([]byte(calls), &list) == nil {
			for _, c := range list {
				args := c["input"]
				if args == nil {
					args = c["args"]
				}
				m.Parts = append(m.Parts, Part{Type: PartToolCall, ID: str(c["toolCallId"]), Name: str(c["toolName"]), Arguments: jsonText(args)})
			}
		} else {
			m.Parts = append(m.Parts, Part{Type: PartText, Text: calls})
		}
		from = append(from, "ai.response.toolCalls")
	}
	if fr := src.Attributes["ai.response.finishReason"]; fr != "" {
		m.FinishReason = fr
	}
	return []Message{m}, strings.Join(from, ", ")
}

// ---------------------------------------------------------------- OpenInference and deprecated single values

func inputOpenInference(src Source) ([]Message, string) {
	return fromKey(src.Content, "input.value", "user")
}

func outputOpenInference(src Source) ([]Message, string) {
	return fromKey(src.Content, "output.value", "assistant")
}

func inputDeprecated(src Source) ([]Message, string) {
	return fromKey(src.Content, "gen_ai.prompt", "user")
}

func outputDeprecated(src Source) ([]Message, string) {
	return fromKey(src.Content, "gen_ai.completion", "assistant")
}

// ---------------------------------------------------------------- flattened attributes

// flat groups attributes prefix.N.rest by N (numeric order): rest → value.
func flat(attrs map[string]string, prefix string) []map[string]string {
	byIndex := map[int]map[string]string{}
	for k, v := range attrs {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		idx, key, ok := strings.Cut(rest, ".")
		n, err := strconv.Atoi(idx)
		if !ok || err != nil || n < 0 {
			continue
		}
		if byIndex[n] == nil {
			byIndex[n] = map[string]string{}
		}
		byIndex[n][key] = v
	}
	keys := make([]int, 0, len(byIndex))
	for n := range byIndex {
		keys = append(keys, n)
	}
	sort.Ints(keys)
	out := make([]map[string]string, len(keys))
	for i, n := range keys {
		out[i] = byIndex[n]
	}
	return out
}

// OpenInference: llm.input_messages.N.message.{role, content,
// contents.M.message_content.{type,text}, tool_calls.M.tool_call.{id,
// function.name, function.arguments}, tool_call_id}.
func inputFlatOpenInference(src Source) ([]Message, string) {
	return flatOpenInference(src.Attributes, "llm.input_messages.", "user")
}

func outputFlatOpenInference(src Source) ([]Message, string) {
	return flatOpenInference(src.Attributes, "llm.output_messages.", "assistant")
}

func flatOpenInference(attrs map[string]string, prefix, role string) ([]Message, string) {
	groups := flat(attrs, prefix)
	if len(groups) == 0 {
		return nil, ""
	}
	var out []Message
	for _, g := range groups {
		m := Message{Role: g["message.role"], Parts: []Part{}}
		if m.Role == "" {
			m.Role = role
		}
		if c := g["message.content"]; c != "" {
			m.Parts = append(m.Parts, Part{Type: PartText, Text: c})
		}
		for _, c := range flat(g, "message.contents.") {
			switch c["message_content.type"] {
			case "text", "":
				m.Parts = append(m.Parts, Part{Type: PartText, Text: c["message_content.text"]})
			case "reasoning":
				m.Parts = append(m.Parts, Part{Type: PartReasoning, Text: c["message_content.text"]})
			default:
				m.Parts = append(m.Parts, Part{Type: PartOther, Text: "[" + c["message_content.type"] + "]"})
			}
		}
		for _, c := range flat(g, "message.tool_calls.") {
			m.Parts = append(m.Parts, Part{Type: PartToolCall, ID: c["tool_call.id"], Name: c["tool_call.function.name"],
				Arguments: c["tool_call.function.arguments"]})
		}
		if id := g["message.tool_call_id"]; id != "" {
			m.Parts = asResults(m.Parts, id)
		}
		out = append(out, m)
	}
	return out, strings.TrimSuffix(prefix, ".") + ".*"
}

// OpenLLMetry: gen_ai.prompt.N.{role, content, tool_call_id,
// tool_calls.M.{id, name, arguments}}, gen_ai.completion.N.{…, finish_reason}.
func inputFlatOpenLLMetry(src Source) ([]Message, string) {
	return flatOpenLLMetry(src.Attributes, "gen_ai.prompt.", "user")
}

func outputFlatOpenLLMetry(src Source) ([]Message, string) {
	return flatOpenLLMetry(src.Attributes, "gen_ai.completion.", "assistant")
}

func flatOpenLLMetry(attrs map[string]string, prefix, role string) ([]Message, string) {
	groups := flat(attrs, prefix)
	if len(groups) == 0 {
		return nil, ""
	}
	var out []Message
	for _, g := range groups {
		m := Message{Role: g["role"], FinishReason: g["finish_reason"], Parts: []Part{}}
		if m.Role == "" {
			m.Role = role
		}
		if c := g["content"]; c != "" {
			// Anthropic's content blocks arrive as a JSON list.
			if strings.HasPrefix(strings.TrimSpace(c), "[") {
				if ms := parseMessages(`[{"role":"`+m.Role+`","content":`+c+`}]`, m.Role); len(ms) == 1 && len(ms[0].Parts) > 0 {
					m.Parts = append(m.Parts, ms[0].Parts...)
				} else {
					m.Parts = append(m.Parts, Part{Type: PartText, Text: c})
				}
			} else {
				m.Parts = append(m.Parts, Part{Type: PartText, Text: c})
			}
		}
		for _, c := range flat(g, "tool_calls.") {
			m.Parts = append(m.Parts, Part{Type: PartToolCall, ID: c["id"], Name: c["name"], Arguments: c["arguments"]})
		}
		if id := g["tool_call_id"]; id != "" {
			m.Parts = asResults(m.Parts, id)
		}
		out = append(out, m)
	}
	return out, strings.TrimSuffix(prefix, ".") + ".*"
}

// asResults turns a tool message's text parts into results of call id.
func asResults(parts []Part, id string) []Part {
	for i := range parts {
		if parts[i].Type == PartText {
			parts[i] = Part{Type: PartToolResult, ID: id, Result: parts[i].Text}
		}
	}
	return parts
}

// ---------------------------------------------------------------- span events

// eventRoles maps the per-message events of OpenTelemetry's earlier GenAI
// conventions to roles.
var eventRoles = map[string]string{
	"gen_ai.system.message": "system", "gen_ai.user.message": "user",
	"gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool",
}

func inputEvents(src Source) ([]Message, string) {
	var out []Message
	from := ""
	for _, e := range src.Events {
		switch {
		case eventRoles[e.Name] != "":
			out = append(out, eventMessage(e, eventRoles[e.Name]))
			from = "events gen_ai.*.message"
		case e.Name == "gen_ai.content.prompt":
			if v := str(e.Attributes["gen_ai.prompt"]); v != "" {
				return parseMessages(v, "user"), "event gen_ai.content.prompt"
			}
		case e.Name == "gen_ai.client.inference.operation.details":
			if v := jsonText(e.Attributes["gen_ai.input.messages"]); v != "" {
				msgs := parseMessages(v, "user")
				if s := jsonText(e.Attributes["gen_ai.system_instructions"]); s != "" {
					msgs = append(systemMessages(Source{Content: map[string]string{"gen_ai.system_instructions": s}}), msgs...)
				}
				return msgs, "event gen_ai.client.inference.operation.details"
			}
		}
	}
	return out, from
}

func outputEvents(src Source) ([]Message, string) {
	var out []Message
	for _, e := range src.Events {
		switch e.Name {
		case "gen_ai.choice":
			m := eventMessage(e, "assistant")
			if msg, ok := e.Attributes["message"].(map[string]any); ok {
				m = message(msg, "assistant")
			}
			m.FinishReason = str(e.Attributes["finish_reason"])
			out = append(out, m)
		case "gen_ai.content.completion":
			if v := str(e.Attributes["gen_ai.completion"]); v != "" {
				return parseMessages(v, "assistant"), "event gen_ai.content.completion"
			}
		case "gen_ai.client.inference.operation.details":
			if v := jsonText(e.Attributes["gen_ai.output.messages"]); v != "" {
				return parseMessages(v, "assistant"), "event gen_ai.client.inference.operation.details"
			}
		}
	}
	if len(out) == 0 {
		return nil, ""
	}
	return out, "events gen_ai.choice"
}

// eventMessage reads a gen_ai.*.message event: content as text or a JSON
// list of parts, tool_calls, and id (a tool message's call id).
func eventMessage(e Event, role string) Message {
	m := map[string]any{"role": role}
	for k, v := range e.Attributes {
		m[k] = v
	}
	if s, ok := m["content"].(string); ok && strings.HasPrefix(strings.TrimSpace(s), "[") {
		var list []any
		if json.Unmarshal([]byte(s), &list) == nil {
			m["content"] = list
		}
	}
	if s, ok := m["tool_calls"].(string); ok {
		var list []any
		if json.Unmarshal([]byte(s), &list) == nil {
			m["tool_calls"] = list
		}
	}
	if id := str(m["id"]); id != "" && role == "tool" {
		m["tool_call_id"] = id
	}
	msg := message(m, role)
	msg.Role = role
	return msg
}

// ---------------------------------------------------------------- values

// str is v as a string ("" for nil; numbers and objects as JSON).
func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return jsonText(x)
	}
}

// jsonText is v as JSON text; a string stays as it is.
func jsonText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return ""
		}
		return string(b)
	}
}
