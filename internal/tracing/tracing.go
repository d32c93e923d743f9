// Package tracing builds the OpenTelemetry tracer provider of tether serve:
// none (tracing off, no cost) unless an OTLP endpoint is configured, else
// one that batches spans to that endpoint over OTLP/HTTP.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tetherhq/tether/internal/buildinfo"
)

// The standard variables that turn tracing on without --otlp-endpoint. The
// exporter reads them (and the other OTEL_EXPORTER_OTLP_* variables:
// headers, timeout, TLS) itself.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// Enabled reports whether tracing is on: an endpoint was given, or one of the
// standard variables is set.
func Enabled(endpoint string) bool {
	return endpoint != "" || os.Getenv(EnvEndpoint) != "" || os.Getenv(EnvTracesEndpoint) != ""
}

// CheckEndpoint refuses an --otlp-endpoint that is not an http or https URL
// (the exporter would only log it, and send nothing).
func CheckEndpoint(endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http or https URL of an OTLP collector (e.g. http://otel-collector:4318)", endpoint)
	}
	return nil
}

// Provider returns the tracer provider for serve, or nil when tracing is off
// (see Enabled). endpoint, when set, is the collector's base URL (spans go to
// its /v1/traces) and wins over the environment. Spans carry service.name
// tether and service.version of this build, unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise; OTEL_TRACES_SAMPLER and its
// argument choose the sampler (default: sample what the caller sampled,
// and every root). Export failures are logged to log. The caller shuts the
// provider down, which sends what is still batched.
func Provider(ctx context.Context, endpoint string, log *slog.Logger) (*sdktrace.TracerProvider, error) {
	if !Enabled(endpoint) {
		return nil, nil
	}
	if err := CheckEndpoint(endpoint); err != nil {
		return nil, err
	}
	var opts []otlptracehttp.Option
	if endpoint != "" {
		// A base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is.
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "tether"), attribute.String("service.version", buildinfo.Short())),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	if log != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn("tracing: spans not exported", "err", err)
		}))
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
