package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Action is what a privacy rule does to the value of one attribute key.
type Action string

// Privacy actions.
const (
	ActionDrop   Action = "drop"   // remove the attribute (or content) entirely
	ActionRedact Action = "redact" // replace the value by RedactedValue
	ActionHash   Action = "hash"   // replace the value by HashPrefix + hex SHA-256 of its text
)

// Valid reports whether a is one of the defined actions.
func (a Action) Valid() bool {
	return a == ActionDrop || a == ActionRedact || a == ActionHash
}

// RedactedValue replaces a value under ActionRedact.
const RedactedValue = "[REDACTED]"

// HashPrefix starts a value replaced under ActionHash.
const HashPrefix = "sha256:"

// Privacy decides what sensitive values Normalize keeps.
//
// Rules apply by exact attribute key, wherever the key appears: span and
// resource attributes, event attributes, content values (tool arguments and
// results, messages: matched by their source attribute key) and the columns
// filled from an attribute (a redacted user.id gives UserID "[REDACTED]"; a
// dropped one leaves UserID empty). A rule on a numeric key (token counts,
// cost) makes that number unreadable, so it counts as absent. ArgsHash is
// computed from the original tool arguments, before any rule applies.
type Privacy struct {
	// Rules maps an attribute key to the action applied to its value.
	Rules map[string]Action
	// NoContent drops every content row (tool arguments and results,
	// messages, system instructions, tool definitions), the flattened
	// per-message attributes some instrumentations send instead
	// (gen_ai.prompt.N.*, gen_ai.completion.N.*, llm.input_messages.*,
	// llm.output_messages.*), and empties the attributes of the per-message
	// events older instrumentations emit (gen_ai.user.message, gen_ai.choice, …).
	NoContent bool
}

// action returns the rule for key, "" when none.
func (p *Privacy) action(key string) Action {
	if len(p.Rules) == 0 {
		return ""
	}
	return p.Rules[key]
}

// hashValue is the replacement for a value under ActionHash.
func hashValue(s string) string {
	sum := sha256.Sum256([]byte(s))
	var b [len(HashPrefix) + 2*sha256.Size]byte
	copy(b[:], HashPrefix)
	hex.Encode(b[len(HashPrefix):], sum[:])
	return string(b[:])
}

// isContentEvent reports whether an event name is one of the per-message
// content events of older GenAI instrumentations.
func isContentEvent(name string) bool {
	switch name {
	case "gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message",
		"gen_ai.tool.message", "gen_ai.choice", "gen_ai.client.inference.operation.details",
		"gen_ai.content.prompt", "gen_ai.content.completion":
		return true
	}
	return false
}

// isFlattenedContentKey reports whether key is one of the flattened,
// indexed message attributes of OpenLLMetry (gen_ai.prompt.0.content) and
// OpenInference (llm.input_messages.0.message.content).
func isFlattenedContentKey(key string) bool {
	return strings.HasPrefix(key, "gen_ai.prompt.") || strings.HasPrefix(key, "gen_ai.completion.") ||
		strings.HasPrefix(key, "llm.input_messages.") || strings.HasPrefix(key, "llm.output_messages.")
}
