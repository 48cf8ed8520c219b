package rollouttest

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/store"
)

func TestNopStoreKeepsNothing(t *testing.T) {
	ctx := context.Background()
	var s NopStore
	if err := s.PutState(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetState(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetState after PutState: %v, want store.ErrNotFound", err)
	}
	if m, err := s.ListState(ctx, ""); err != nil || len(m) != 0 {
		t.Fatalf("ListState = %v, %v; want nothing", m, err)
	}
}

func TestCountingSenderCounts(t *testing.T) {
	var s CountingSender
	for range 3 {
		if !s.Send(uuid.New(), nil) {
			t.Fatal("Send reported a failure")
		}
	}
	if s.N.Load() != 3 {
		t.Fatalf("counted %d, want 3", s.N.Load())
	}
}

func TestRequestSendsTheBearerToken(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer adm" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(r.Method + " " + r.URL.Path))
	})
	tests := []struct {
		token    string
		wantCode int
		wantBody string
	}{
		{"adm", http.StatusOK, "POST /api/v1/x"},
		{"other", http.StatusUnauthorized, ""},
	}
	for _, tt := range tests {
		rec := Request(api, "POST", "/api/v1/x", tt.token)
		if rec.Code != tt.wantCode || rec.Body.String() != tt.wantBody {
			t.Errorf("token %q: %d %q, want %d %q", tt.token, rec.Code, rec.Body, tt.wantCode, tt.wantBody)
		}
	}
}

func TestDescription(t *testing.T) {
	d := Description([]string{"service.name=otelcol"}, "host.name=h1", "site.type=edge=x")
	if len(d.IdentifyingAttributes) != 1 || d.IdentifyingAttributes[0].Key != "service.name" ||
		d.IdentifyingAttributes[0].Value.GetStringValue() != "otelcol" {
		t.Fatalf("identifying %v", d.IdentifyingAttributes)
	}
	tests := []struct{ key, value string }{{"host.name", "h1"}, {"site.type", "edge=x"}}
	for i, tt := range tests {
		if kv := d.NonIdentifyingAttributes[i]; kv.Key != tt.key || kv.Value.GetStringValue() != tt.value {
			t.Errorf("attribute %d = %s=%s, want %s=%s", i, kv.Key, kv.Value.GetStringValue(), tt.key, tt.value)
		}
	}
}
