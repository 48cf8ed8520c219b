// Package apispectest puts the API document under the admin API of a
// test: every answer of a documented route is checked against it.
package apispectest

import (
	"testing"

	"github.com/myriarch/myriarch/server/apispec"
)

// Net returns the API document and the check that fails t on each answer
// it does not describe (admin.Deps.Spec and CheckResponse): a new field or
// a changed type fails the tests until api/openapi.yaml says it.
func Net(t testing.TB) (*apispec.Spec, func(pattern string, err error)) {
	t.Helper()
	spec, err := apispec.Load()
	if err != nil {
		t.Fatal(err)
	}
	return spec, CheckResponses(t)
}

// CheckResponses fails t on each answer the document does not describe.
func CheckResponses(t testing.TB) func(pattern string, err error) {
	return func(pattern string, err error) {
		t.Errorf("the API document does not describe an answer: %v", err)
	}
}
