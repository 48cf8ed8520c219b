// Package api holds the OpenAPI 3.1 document of myriarchd's admin API
// (openapi.yaml), which the server serves, checks its requests against,
// and the admin client is generated from.
package api

import _ "embed"

// OpenAPI is openapi.yaml as written.
//
//go:embed openapi.yaml
var OpenAPI []byte
