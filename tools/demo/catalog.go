package demo

import "time"

// usageStyle is how an instrumentation reports a chat call's token usage.
type usageStyle int

const (
	// usageInclusive follows the current spec: input includes cache reads and writes.
	usageInclusive usageStyle = iota
	// usageAdditive reports input without the cached tokens (cache reads and
	// writes as their own attributes), as Anthropic's API does and as
	// instrumentations that pass its numbers through report them.
	usageAdditive
	// usageDeprecated uses gen_ai.system, gen_ai.usage.prompt_tokens/completion_tokens
	// and, for a model with prompt caching, gen_ai.usage.cache_read_input_tokens.
	usageDeprecated
	// usageClientCost is the current spec plus a client-computed gen_ai.usage.cost.amount.
	usageClientCost
)

// cacheStyle is how a provider caches prompt prefixes.
type cacheStyle int

const (
	cacheNone      cacheStyle = iota
	cacheExplicit             // Anthropic: breakpoints; writes then reads
	cacheAutomatic            // OpenAI: reads in 128-token steps once a prefix ≥ 1024 repeats
	cacheImplicit             // Gemini: best-effort reads of repeated prefixes
)

// model is one model as a provider serves it.
type model struct {
	provider     string // gen_ai.provider.name (gen_ai.system for deprecated spans)
	request      string // gen_ai.request.model and span name suffix
	response     string // gen_ai.response.model (dated)
	server       string // server.address
	cache        cacheStyle
	ttft         [2]int // time to first token, ms
	tokensPerSec [2]int // output speed
	reasoning    bool   // reports reasoning tokens inside output
	toolFinish   string // finish reason when the model asks for tools
	stopFinish   string // finish reason of a final answer
	callIDPrefix string // prefix of gen_ai.tool.call.id values it issues
	respIDPrefix string // prefix of gen_ai.response.id
	errorType    string // error.type of a failed call (overload)
	// cost per token in USD, for usageClientCost only
	inputCost, outputCost float64
}

var (
	claudeSonnet = model{
		provider: "anthropic", request: "claude-sonnet-4-5", response: "claude-sonnet-4-5-20250929",
		server: "api.anthropic.com", cache: cacheExplicit, ttft: [2]int{600, 1500}, tokensPerSec: [2]int{55, 80},
		toolFinish: "tool_use", stopFinish: "end_turn", callIDPrefix: "toolu_01", respIDPrefix: "msg_01",
		errorType: "overloaded_error",
	}
	gpt4o = model{
		provider: "openai", request: "gpt-4o", response: "gpt-4o-2024-08-06",
		server: "api.openai.com", cache: cacheAutomatic, ttft: [2]int{300, 900}, tokensPerSec: [2]int{70, 110},
		toolFinish: "tool_calls", stopFinish: "stop", callIDPrefix: "call_", respIDPrefix: "chatcmpl-",
		errorType: "rate_limit_exceeded",
	}
	gpt4oMini = model{
		provider: "openai", request: "gpt-4o-mini", response: "gpt-4o-mini-2024-07-18",
		server: "api.openai.com", cache: cacheAutomatic, ttft: [2]int{250, 700}, tokensPerSec: [2]int{90, 140},
		toolFinish: "tool_calls", stopFinish: "stop", callIDPrefix: "call_", respIDPrefix: "chatcmpl-",
		errorType: "rate_limit_exceeded",
	}
	gpt41Mini = model{
		provider: "openai", request: "gpt-4.1-mini", response: "gpt-4.1-mini-2025-04-14",
		server: "api.openai.com", cache: cacheAutomatic, ttft: [2]int{250, 700}, tokensPerSec: [2]int{90, 140},
		toolFinish: "tool_calls", stopFinish: "stop", callIDPrefix: "call_", respIDPrefix: "chatcmpl-",
		errorType: "rate_limit_exceeded",
	}
	gemini25Flash = model{
		provider: "gcp.gemini", request: "gemini-2.5-flash", response: "gemini-2.5-flash",
		server: "generativelanguage.googleapis.com", cache: cacheImplicit, ttft: [2]int{400, 1200},
		tokensPerSec: [2]int{120, 200}, reasoning: true,
		toolFinish: "stop", stopFinish: "stop", callIDPrefix: "fc_", respIDPrefix: "resp_",
		errorType: "RESOURCE_EXHAUSTED",
	}
	acmeLLM = model{
		provider: "acme", request: "acme-llm-7b", response: "acme-llm-7b",
		server: "llm.acme.internal", cache: cacheNone, ttft: [2]int{80, 250}, tokensPerSec: [2]int{150, 250},
		toolFinish: "tool_calls", stopFinish: "stop", callIDPrefix: "call_", respIDPrefix: "cmpl-",
		errorType: "503", inputCost: 0.0000002, outputCost: 0.0000006,
	}
)

// agentProfile is one agent: its model, how big its prompt prefix is, its
// tools and how much work one invocation does.
type agentProfile struct {
	name string
	// version is the agent's gen_ai.agent.version: part of a run's
	// configuration, so a new version starts a new version of its tasks.
	version string
	model   *model
	style   usageStyle
	prefix  [2]int // system prompt + tool definitions, tokens
	tools   []weightedTool
	natural [2]int // spans of one invocation in a natural run (invoke span included)
	big     [2]int // spans of one invocation in a big run
	// bigPrompt, when set, is the range of input tokens of every call of an
	// agent whose prompt starts with the current time: it never hits the cache.
	bigPrompt [2]int
}

type weightedTool struct {
	name   string
	weight int
}

var (
	plannerAgent = agentProfile{name: "planner", version: "3.2.0", model: &gemini25Flash, style: usageInclusive, prefix: [2]int{1400, 1800}}
	researcher   = agentProfile{
		name: "researcher", version: "2.1.0", model: &claudeSonnet, style: usageAdditive, prefix: [2]int{2200, 2600},
		tools:   []weightedTool{{"web_search", 4}, {"fetch_url", 4}, {"vector_search", 2}},
		natural: [2]int{8, 22}, big: [2]int{20, 80},
	}
	coder = agentProfile{
		name: "coder", version: "1.4.0", model: &gpt4o, style: usageInclusive, prefix: [2]int{3000, 3500},
		tools:   []weightedTool{{"code_sandbox", 5}, {"vector_search", 2}, {"fetch_url", 2}},
		natural: [2]int{8, 22}, big: [2]int{20, 80},
	}
	summarizer = agentProfile{
		name: "summarizer", version: "1.0.3", model: &gpt4oMini, style: usageInclusive,
		natural: [2]int{2, 4}, big: [2]int{2, 6}, bigPrompt: [2]int{3000, 6000},
	}
	triager = agentProfile{
		name: "triager", version: "0.9.1", model: &gpt41Mini, style: usageDeprecated, prefix: [2]int{800, 1000},
		tools:   []weightedTool{{"vector_search", 3}, {"fetch_url", 2}},
		natural: [2]int{7, 12}, big: [2]int{10, 30},
	}
	// coderV2 is the coder the evaluation experiment tries as a candidate
	// for code_fix: version 1.5.0, whose longer prompt tells it to check
	// every edit with the whole suite, the race detector and the linter
	// (v2Commands). It takes more steps and reads more tokens than coder,
	// and fixes fewer cases (see evalPlan).
	coderV2 = agentProfile{
		name: "coder", version: "1.5.0", model: &gpt4o, style: usageInclusive, prefix: [2]int{5200, 5800},
		tools:   []weightedTool{{"code_sandbox", 5}, {"vector_search", 2}, {"fetch_url", 2}},
		natural: [2]int{24, 32}, big: [2]int{20, 80},
	}
)

// task is a kind of work: which sub-agents it uses, the first one always.
type task struct {
	name   string
	agents []*agentProfile // agents[0] always runs; each other one with probability optional
	topics []string
}

// app is a service that runs agents.
type app struct {
	service string
	tasks   []task
	users   int
}

var apps = []app{
	{
		service: "support-bot", users: 40,
		tasks: []task{
			{name: "triage_ticket", agents: []*agentProfile{&triager, &researcher, &summarizer}, topics: ticketTopics},
			{name: "answer_question", agents: []*agentProfile{&researcher, &summarizer}, topics: ticketTopics},
		},
	},
	{
		service: "research-agent", users: 15,
		tasks: []task{
			{name: "research_report", agents: []*agentProfile{&researcher, &coder, &summarizer}, topics: researchTopics},
		},
	},
	{
		service: "code-assistant", users: 25,
		tasks: []task{
			{name: "code_fix", agents: []*agentProfile{&coder, &researcher, &summarizer}, topics: codeTopics},
		},
	},
}

// tool describes a tool's latency, failures and retry policy.
type tool struct {
	name        string
	description string
	latency     [2]int // ms, a successful call
	tail        float64
	tailLatency [2]int // ms, the slow tail
	failRate    float64
	failLatency [2]int // ms, a failed call
	errorType   string
	maxAttempts int // > 1: failed calls are retried, attempts recorded
	resultToks  [2]int
}

var tools = map[string]tool{
	"web_search": {
		name: "web_search", description: "Search the web and return the top results.",
		latency: [2]int{300, 1500}, failRate: 0.05, failLatency: [2]int{60, 250}, errorType: "rate_limited",
		maxAttempts: 3, resultToks: [2]int{400, 1200},
	},
	"vector_search": {
		name: "vector_search", description: "Semantic search over the knowledge base.",
		latency: [2]int{20, 80}, resultToks: [2]int{300, 900},
	},
	"code_sandbox": {
		name: "code_sandbox", description: "Run a command or a snippet in an isolated sandbox.",
		latency: [2]int{2000, 8000}, failRate: 0.03, failLatency: [2]int{30000, 30500}, errorType: "timeout",
		maxAttempts: 1, resultToks: [2]int{100, 800},
	},
	"fetch_url": {
		name: "fetch_url", description: "Fetch a web page and return its text.",
		latency: [2]int{100, 900}, tail: 0.08, tailLatency: [2]int{1500, 6000},
		failRate: 0.25, failLatency: [2]int{3000, 3100}, errorType: "timeout",
		maxAttempts: 3, resultToks: [2]int{800, 3000},
	},
	// The side-effecting tools the planner calls (see incidents.go): they
	// never fail; make run classes them with --tool-effects.
	"issue_refund": {
		name: "issue_refund", description: "Refund an invoice's charge to the customer's card.",
		latency: [2]int{400, 1200}, resultToks: [2]int{40, 80},
	},
	"merge_pull_request": {
		name: "merge_pull_request", description: "Merge a pull request into the default branch.",
		latency: [2]int{800, 2500}, resultToks: [2]int{40, 90},
	},
}

// toolSchemas are the JSON schemas of the tools' arguments, as a model is
// offered them (gen_ai.tool.definitions).
var toolSchemas = map[string]string{
	"web_search":    `{"type":"object","properties":{"query":{"type":"string"},"max_results":{"type":"integer"}},"required":["query"]}`,
	"vector_search": `{"type":"object","properties":{"query":{"type":"string"},"index":{"type":"string"},"top_k":{"type":"integer"}},"required":["query","index"]}`,
	"code_sandbox":  `{"type":"object","properties":{"language":{"type":"string"},"command":{"type":"string"},"timeout_s":{"type":"integer"}},"required":["command"]}`,
	"fetch_url":     `{"type":"object","properties":{"url":{"type":"string"},"timeout_s":{"type":"integer"}},"required":["url"]}`,
}

// backoff is the pause before a retry.
var backoff = [2]int{200, 1000}

// thinkTime is the pause between two runs of a conversation.
var thinkTime = [2]time.Duration{10 * time.Second, 120 * time.Second}

var ticketTopics = []string{
	"cannot reset password after SSO migration",
	"refund for duplicate charge on invoice INV-20431",
	"webhook deliveries failing with 410 Gone",
	"export to CSV times out for large workspaces",
	"two-factor codes not arriving by SMS in Brazil",
	"seat count wrong after downgrading plan",
	"API rate limit raised but still getting 429",
	"calendar sync duplicates recurring events",
}

var researchTopics = []string{
	"EU AI Act obligations for general-purpose models",
	"battery recycling capacity in Europe 2026",
	"state of the WebAssembly component model",
	"heat pump adoption in cold climates",
	"small modular reactors licensing timelines",
	"open-weight LLM licenses compared",
	"ClickHouse vs Druid for observability workloads",
}

var codeTopics = []string{
	"flaky test TestCheckoutTimeout in payments",
	"nil pointer dereference in cache eviction",
	"data race in session refresh",
	"slow query in orders listing endpoint",
	"off-by-one in pagination cursor",
	"memory leak in websocket hub",
}

var domains = []string{
	"en.wikipedia.org", "docs.python.org", "pkg.go.dev", "github.com", "stackoverflow.com",
	"arxiv.org", "www.reuters.com", "eur-lex.europa.eu", "support.example.com", "blog.cloudflare.com",
}
