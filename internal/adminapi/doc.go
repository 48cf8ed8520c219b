// Package adminapi is the admin API's typed client and models, generated
// from api/openapi.yaml (client.gen.go; do not edit it): run go generate
// in this directory after changing the document.
package adminapi

//go:generate go tool oapi-codegen -config oapi-codegen.yaml -o client.gen.go ../../api/openapi.yaml
