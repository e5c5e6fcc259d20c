package warm

import (
	_ "github.com/ClickHouse/clickhouse-go/v2"
	_ "github.com/apache/arrow/go/v17/arrow/ipc"
	_ "github.com/apache/arrow/go/v17/parquet/pqarrow"
	_ "github.com/chromedp/chromedp"
	_ "github.com/gin-gonic/gin"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/spf13/cobra"
	_ "go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	_ "gopkg.in/yaml.v3"
)
