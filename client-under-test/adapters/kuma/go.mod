module xds-conformance.local/kuma-cp

go 1.26.5

require github.com/kumahq/kuma/v2 v2.14.3

// Kuma v2.14.3's own replace lines (its go.mod:298-303): a module's replace
// lines bind only its main module, so a module that builds kuma-cp repeats them.
replace (
	github.com/envoyproxy/go-control-plane => github.com/kumahq/go-control-plane v0.14.0-kong-1
	github.com/envoyproxy/go-control-plane/contrib => github.com/kumahq/go-control-plane/contrib v1.36.0-kong-1
	github.com/envoyproxy/go-control-plane/envoy => github.com/kumahq/go-control-plane/envoy v1.37.0-kong-1
	github.com/envoyproxy/go-control-plane/ratelimit => github.com/kumahq/go-control-plane/ratelimit v0.1.0-kong-1
)
